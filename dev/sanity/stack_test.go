//go:build guest

package sanity_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/bridge"
	csicontroller "github.com/lvm-operator/lvm-operator/internal/csi/controller"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/nodeagent"
)

// The guest's volume groups and the device classes over them.
const (
	nodeName = "sanity-node"
	thickVG  = "sanity-thick"
	thinVG   = "sanity-thin"
	thinPool = "pool"
)

// lvmdConfig is the configuration of the external lvmd (`lvms lvmd`) the node agent uses, with an
// lvcreate option class that stripes over the thick VG's two disks.
const lvmdConfig = `
lvcreate-option-classes:
  - name: ` + stripedOptionClass + `
    options: ["--stripes", "2", "--stripesize", "64k"]
device-classes:
  - name: thick
    volume-group: ` + thickVG + `
    default: true
    spare-gb: 0
  - name: thin
    volume-group: ` + thinVG + `
    type: thin
    thin-pool:
      name: ` + thinPool + `
      overprovision-ratio: 10
`

// stack is the running driver: node agent and CSI controller, with a client of the host's apiserver.
type stack struct {
	k8s client.Client
	lvm *lvm.Client
	// nodeSocket serves Identity+Node, controllerSocket Identity+Controller.
	nodeSocket, controllerSocket string
	// dir plays the kubelet's directory: csi-sanity's target paths are below it.
	dir string
	// lvmdSocket is where the external lvmd serves.
	lvmdSocket string
}

// startStack builds the volume groups on disks and starts everything; t.Cleanup stops it. The
// manager logs to logPath.
func startStack(t *testing.T, dir, logPath string, disks []string) *stack {
	t.Helper()
	h := exec.NewHost()
	s := &stack{
		lvm:              lvm.New(h),
		nodeSocket:       filepath.Join(dir, "node.sock"),
		controllerSocket: filepath.Join(dir, "controller.sock"),
		lvmdSocket:       filepath.Join(dir, "lvmd.sock"),
		dir:              dir,
	}
	// Set the logger first: controller-runtime discards its logs for good when nothing sets one within
	// 30 s of first use.
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.Level(zapcore.DebugLevel)))
	if err := s.createVGs(t.Context(), disks); err != nil {
		t.Fatal(err)
	}
	if err := s.startLVMD(t, dir, filepath.Join(filepath.Dir(logPath), "lvmd.log")); err != nil {
		t.Fatal(err)
	}
	cfg := connectControlPlane(t)
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	if s.k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		t.Fatalf("client: %v", err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	if err := s.k8s.Create(t.Context(), node); err != nil {
		t.Fatalf("create node: %v", err)
	}
	if err := s.startManager(t, cfg, scheme, h); err != nil {
		t.Fatal(err)
	}
	if err := s.waitForCapacity(t.Context(), "thick", "thin"); err != nil {
		t.Fatal(err)
	}
	return s
}

// createVGs makes the thick VG on the first two disks and the thin VG with its pool on the third,
// through internal/lvm (tagged as ours).
func (s *stack) createVGs(ctx context.Context, disks []string) error {
	if len(disks) < 3 {
		return fmt.Errorf("need 3 guest disks, have %v", disks)
	}
	if err := s.lvm.CreateVG(ctx, thickVG, disks[:2]); err != nil {
		return fmt.Errorf("thick VG: %w", err)
	}
	if err := s.lvm.CreateVG(ctx, thinVG, disks[2:3]); err != nil {
		return fmt.Errorf("thin VG: %w", err)
	}
	vg, err := s.lvm.OwnedVG(ctx, thinVG)
	if err != nil {
		return fmt.Errorf("thin VG: %w", err)
	}
	if err := s.lvm.CreateThinPool(
		ctx,
		vg,
		lvm.ThinPoolOptions{Name: thinPool, Extents: lvm.PercentOf(90, "FREE")},
	); err != nil {
		return fmt.Errorf("thin pool: %w", err)
	}
	return nil
}

// connectControlPlane opens the guest side of the serial-line bridge (/dev/ttyS1), which makes the
// host's kube-apiserver reachable at the same 127.0.0.1 address in the guest, and returns the
// config of the kubeconfig the host half wrote, once the apiserver answers through the bridge.
func connectControlPlane(t *testing.T) *rest.Config {
	t.Helper()
	apiAddr, kubeconfig := os.Getenv(envAPIAddr), os.Getenv(envKubeconfig)
	if apiAddr == "" || kubeconfig == "" {
		t.Fatalf("%s and %s are not set: run hack/sanity.sh (make sanity)", envAPIAddr, envKubeconfig)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	session, err := bridge.Guest(ctx, "/dev/ttyS1", bridge.Options{Forward: map[string]string{apiAddr: apiAddr}})
	if err != nil {
		t.Fatalf("bridge to the host's apiserver: %v", err)
	}
	t.Cleanup(func() { _ = session.Close() })
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, err := cs.Discovery().ServerVersion()
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("apiserver %s through the bridge: %v", apiAddr, err)
		case <-time.After(time.Second): // the bridge and the apiserver are both up by now; this is a slow guest
		}
	}
	t.Logf("apiserver %s reachable through the bridge in %s", apiAddr, time.Since(start).Round(time.Millisecond))
	return cfg
}

func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, topolvmv1.AddToScheme, lvmv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	return s, nil
}

// startManager runs the node agent on the external lvmd and the CSI controller service on one
// manager, as `lvms node --lvmd-socket` and `lvms operator` would on a single-node cluster.
func (s *stack) startManager(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, h exec.Executor) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := nodeagent.Setup(mgr, nodeagent.Options{
		NodeName: nodeName, Namespace: "lvms-system", Executor: h,
		CSIEndpoint: "unix://" + s.nodeSocket, LVMDSocket: s.lvmdSocket, KubeletDir: s.dir,
	}); err != nil {
		cancel()
		return fmt.Errorf("node agent: %w", err)
	}
	if err := csicontroller.AddToManager(ctx, mgr, "unix://"+s.controllerSocket, nil, ""); err != nil {
		cancel()
		return fmt.Errorf("CSI controller: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return nil
}

// waitForCapacity waits until the node agent has annotated the Node with the capacity of classes:
// the CSI controller places volumes by these annotations.
func (s *stack) waitForCapacity(ctx context.Context, classes ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var node corev1.Node
	for {
		err := s.k8s.Get(ctx, client.ObjectKey{Name: nodeName}, &node)
		if err == nil && hasAnnotations(&node, classes) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s has no capacity annotations for %v (annotations %v, last error %w)",
				nodeName, classes, node.Annotations, errors.Join(err, ctx.Err()))
		case <-time.After(200 * time.Millisecond): // the annotator writes once lvmd has read the VGs
		}
	}
}

func hasAnnotations(node *corev1.Node, classes []string) bool {
	for _, c := range classes {
		if _, ok := node.Annotations[driver.CapacityAnnotation(c)]; !ok {
			return false
		}
	}
	return true
}

// leftovers lists LogicalVolumes and LVs (other than the thin pool) that still exist: after a
// csi-sanity run, which deletes everything it created, there must be none.
func (s *stack) leftovers(ctx context.Context) ([]string, error) {
	var out []string
	var list topolvmv1.LogicalVolumeList
	if err := s.k8s.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list LogicalVolumes: %w", err)
	}
	for _, lv := range list.Items {
		out = append(out, "LogicalVolume "+lv.Name)
	}
	state, err := s.lvm.State(ctx, thickVG, thinVG)
	if err != nil {
		return nil, fmt.Errorf("read LVM state: %w", err)
	}
	for _, vg := range []string{thickVG, thinVG} {
		for _, lv := range state.LVsOf(vg) {
			if lv.Name != thinPool {
				out = append(out, "LV "+lv.FullName())
			}
		}
	}
	return out, nil
}
