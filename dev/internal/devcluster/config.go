package devcluster

import (
	"encoding/json"
	"fmt"
	"os"
)

// Config is what `up` decided and the supervisor runs: written to Layout.Config.
type Config struct {
	// RepoDir is the repository root (config/, hack/uml/).
	RepoDir string `json:"repoDir"`
	// KubeAssets holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl.
	KubeAssets string `json:"kubeAssets"`
	// CSITools is hack/csi-tools.sh's directory; the cluster runs its snapshot-controller and
	// applies its snapshot-crds/.
	CSITools string `json:"csiTools"`
	// LVMSDev is the static lvms-dev binary that runs the supervisor.
	LVMSDev string `json:"lvmsDev"`
	// GuestBridge is the static guestbridge binary.
	GuestBridge string `json:"guestBridge"`
	// Nodes is the number of guest nodes.
	Nodes int `json:"nodes"`
	// Disks per node and their size in bytes.
	Disks    int   `json:"disks"`
	DiskSize int64 `json:"diskSize"`
	// MemoryMiB per guest.
	MemoryMiB int `json:"memoryMiB"`
	// MaxPods is each kubelet's maxPods.
	MaxPods int `json:"maxPods"`
	// Images are the OCI archives the nodes import (no registry).
	Images []string `json:"images"`
	// ProductDigest pins the product image (empty: the product is not installed);
	// ProductDigestFile is where it was read.
	ProductDigest     string `json:"productDigest,omitempty"`
	ProductDigestFile string `json:"productDigestFile,omitempty"`
	// SchedulerExtender installs the product with the scheduler-extender component and runs the
	// kube-scheduler with the extender (extender.go).
	SchedulerExtender bool `json:"schedulerExtender,omitempty"`
	// SnapshotMetadata installs the product with the snapshot-metadata component, the
	// SnapshotMetadataService CRD, and imports the sidecar's and the lister's images (snapmeta.go).
	SnapshotMetadata bool `json:"snapshotMetadata,omitempty"`
	// Evacuator installs the product with the evacuator component (evacuator.go).
	Evacuator bool `json:"evacuator,omitempty"`
	// Profiling installs the product with the profiling component: the operator and the node
	// agents serve Go's runtime profiles on their metrics endpoints.
	Profiling bool `json:"profiling,omitempty"`
	// APIServerArgs are more kube-apiserver flags.
	APIServerArgs []string `json:"apiserverArgs,omitempty"`
	// KCMArgs are more kube-controller-manager flags.
	KCMArgs []string `json:"kcmArgs,omitempty"`
	// Users get a kubeconfig each (Layout.UserKubeconfig), in group system:masters.
	Users []string `json:"users,omitempty"`
}

// nodeName is the name of guest node i.
func nodeName(i int) string { return fmt.Sprintf("node-%d", i) }

// State is what the supervisor records about the running cluster in Layout.State.
type State struct {
	// Supervisor is the supervisor's pid.
	Supervisor int `json:"supervisor"`
	// Ports are the host listeners by name (all on 127.0.0.1).
	Ports map[string]int `json:"ports"`
	// Components are the host processes in start order (their pid files are Layout.PIDFile).
	Components []string `json:"components"`
	// Nodes are the node names.
	Nodes []string `json:"nodes"`
}

// Namespace is the operator namespace of the dev cluster.
const Namespace = "lvms-system"

// GuestAPIPort is the guest-local port at which a guest reaches the apiserver.
const GuestAPIPort = 6443

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// ReadConfig returns the configuration `up` wrote for the cluster in l.
func ReadConfig(l Layout) (Config, error) {
	var cfg Config
	err := readJSON(l.Config(), &cfg)
	return cfg, err
}
