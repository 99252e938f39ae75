package sanity_test

// The environment of the host half (set by hack/sanity.sh) and what it hands the guest half.
const (
	// envGuestTest is the compiled guest test binary (go test -c -tags guest ./dev/sanity).
	envGuestTest = "SANITY_GUEST_TEST"
	// envTimeout bounds the guest (a Go duration; default defaultGuestTimeout).
	envTimeout = "SANITY_GUEST_TIMEOUT"
	// envMemory is the guest's memory in MiB (default defaultGuestMemory).
	envMemory = "SANITY_MEM"
	// envKubeconfig names the kubeconfig the guest half reads; envAPIAddr the apiserver address,
	// the same on both sides of the bridge.
	envKubeconfig = "SANITY_KUBECONFIG"
	envAPIAddr    = "SANITY_API_ADDR"
	// envOut is the directory both halves write logs and summaries to.
	envOut = "SANITY_OUT"
	// envLVMS is the product binary (static): the guest runs `lvms lvmd` from it as the external
	// lvmd of the node agent.
	envLVMS = "SANITY_LVMS"
)
