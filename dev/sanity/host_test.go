//go:build sanity

package sanity_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/bridge"
	"github.com/lvm-operator/lvm-operator/dev/internal/uml"
)

// The guest's defaults.
const (
	defaultGuestTimeout = 40 * time.Minute
	defaultGuestMemory  = 1024
)

// TestSanityHost is the host half of make sanity: it starts the control plane (etcd and
// kube-apiserver from KUBEBUILDER_ASSETS) here on the host, where it starts in seconds, and boots
// one User-mode Linux guest that runs the guest half (TestSanity: volume groups, node agent, CSI
// controller, csi-sanity) with real lvm2. The guest reaches the apiserver over the serial-line
// bridge at the same 127.0.0.1 address. The test fails when the guest does not report exit 0.
func TestSanityHost(t *testing.T) {
	guestTest := requireEnv(t, envGuestTest)
	csiSanity := requireEnv(t, "CSI_SANITY")
	outDir := requireEnv(t, envOut)
	lvmsBin := requireEnv(t, envLVMS)
	timeout, mem := guestLimits(t)
	kubeconfig, apiAddr := startHostControlPlane(t, outDir)

	hostEnd, guestEnd, err := uml.NewSerialLine("bridge")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = guestEnd.Close() }()
	ctx, cancel := context.WithTimeout(t.Context(), timeout+time.Minute)
	defer cancel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	env := uml.StandardEnv()
	for k, v := range map[string]string{
		"CSI_SANITY": csiSanity, envOut: outDir, envKubeconfig: kubeconfig, envAPIAddr: apiAddr,
		envLVMS: lvmsBin,
	} {
		env[k] = v
	}
	testTimeout := timeout - time.Minute
	opts := uml.Options{
		Command: []string{guestTest, "-test.v", "-test.count=1", "-test.run=^TestSanity$",
			"-test.timeout=" + testTimeout.String()},
		Env: env, Dir: wd, Disks: uml.StandardDisks(), MemoryMiB: mem, Timeout: timeout,
		Stdout: os.Stdout, SharedDirs: []string{outDir},
		SerialLines: []uml.SerialLine{{Index: 1, File: guestEnd}},
	}
	type result struct {
		res *uml.Result
		err error
	}
	done := make(chan result, 1)
	// The bridge handshake gives up when the guest ends without starting its side.
	hsCtx, hsCancel := context.WithCancel(ctx)
	defer hsCancel()
	t.Logf("booting the guest (%d MiB, timeout %s); apiserver %s", mem, timeout, apiAddr)
	go func() {
		defer hsCancel()
		res, err := uml.Run(ctx, opts)
		done <- result{res, err}
	}()
	h, bridgeErr := bridge.Host(hsCtx, hostEnd, bridge.Options{Allow: []string{apiAddr}, Log: bridgeLog(t, outDir)})
	if bridgeErr == nil {
		defer func() { _ = h.Close() }()
	}
	r := <-done
	if r.res != nil {
		t.Logf(
			"guest timings: boot-to-command %s, command %s, total %s",
			r.res.Boot.Round(
				time.Millisecond,
			),
			r.res.Command.Round(time.Millisecond),
			r.res.Total.Round(time.Millisecond),
		)
	}
	switch {
	case r.err != nil:
		t.Fatalf("guest: %v (bridge: %v)", r.err, bridgeErr)
	case bridgeErr != nil:
		t.Fatalf("the guest never opened its side of the bridge: %v (guest exit %d)", bridgeErr, r.res.ExitCode)
	case r.res.ExitCode != 0:
		t.Fatalf("guest test failed: exit %d (driver log %s)", r.res.ExitCode, filepath.Join(outDir, "stack.log"))
	}
}

// guestLimits returns the guest's timeout and memory (MiB) from the environment or the defaults.
func guestLimits(t *testing.T) (time.Duration, int) {
	t.Helper()
	timeout := defaultGuestTimeout
	if v := os.Getenv(envTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", envTimeout, v, err)
		}
		timeout = d
	}
	mem := defaultGuestMemory
	if v := os.Getenv(envMemory); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 256 {
			t.Fatalf("%s=%q: want MiB, at least 256", envMemory, v)
		}
		mem = n
	}
	return timeout, mem
}

func requireEnv(t *testing.T, k string) string {
	t.Helper()
	v := os.Getenv(k)
	if v == "" {
		t.Fatalf("%s is not set: run hack/sanity.sh (make sanity)", k)
	}
	return v
}

// startHostControlPlane starts etcd and kube-apiserver with the project's CRDs, logging to
// outDir/control-plane.log, and writes an admin kubeconfig to outDir. It returns the kubeconfig's
// path and the apiserver's host:port.
func startHostControlPlane(t *testing.T, outDir string) (kubeconfig, apiAddr string) {
	t.Helper()
	requireEnv(t, "KUBEBUILDER_ASSETS")
	logFile, err := os.Create(filepath.Join(outDir, "control-plane.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	env := &envtest.Environment{
		CRDDirectoryPaths:        []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	env.ControlPlane.Etcd = &envtest.Etcd{Out: logFile, Err: logFile}
	env.ControlPlane.APIServer = &envtest.APIServer{Out: logFile, Err: logFile}
	// Bound to 127.0.0.1, the endpoint reconciler of the kubernetes Service must be off.
	env.ControlPlane.APIServer.Configure().
		Set("advertise-address", "127.0.0.1").
		Set("endpoint-reconciler-type", "none")
	start := time.Now()
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop() // a failed start can leave etcd or kube-apiserver running
		t.Fatalf("start control plane (log %s): %v", logFile.Name(), err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	t.Logf("control plane started in %s at %s", time.Since(start).Round(time.Millisecond), cfg.Host)
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("apiserver address %q: %v", cfg.Host, err)
	}
	user, err := env.AddUser(envtest.User{Name: "sanity", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatalf("apiserver user: %v", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	kubeconfig = filepath.Join(outDir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, u.Host
}

// bridgeLog logs the host side of the bridge to outDir/bridge-host.log.
func bridgeLog(t *testing.T, outDir string) logr.Logger {
	t.Helper()
	f, err := os.Create(filepath.Join(outDir, "bridge-host.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return funcr.New(func(prefix, args string) { fmt.Fprintln(f, time.Now().Format(time.RFC3339Nano), prefix, args) },
		funcr.Options{})
}
