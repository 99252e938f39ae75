package noderemoval_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/noderemoval"
)

const ns = "lvms-system"

var k8s client.Client

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set; run `make test-unit`")
		return 1
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest: %v\n", err)
		_ = env.Stop() // a failed CRD install leaves etcd and the apiserver running otherwise
		return 1
	}
	defer func() { _ = env.Stop() }()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = lvmv1alpha1.AddToScheme(scheme)
	_ = topolvmv1.AddToScheme(scheme)
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Without --release-volumes-of-removed-nodes and --delete-claims-of-removed-nodes, as shipped;
	// TestLogicalVolumesReleasedOnlyWithTheFlag and TestClaimsDeletedOnlyWithTheFlag run reconcilers
	// with them by hand.
	if err := noderemoval.New(mgr.GetClient(), ns, noderemoval.Options{}).SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = mgr.Start(ctx) }()
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// TestDeletedNodeReleased: the finalizer and node status of a node that leaves the cluster are
// released; those of a node that stays are kept.
func TestDeletedNodeReleased(t *testing.T) {
	ctx := context.Background()
	for _, n := range []string{"stays", "leaves"} {
		if err := k8s.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
		st := &lvmv1alpha1.LVMVolumeGroupNodeStatus{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns}}
		if err := k8s.Create(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	vg := &lvmv1alpha1.LVMVolumeGroup{ObjectMeta: metav1.ObjectMeta{Name: "vg1", Namespace: ns, Finalizers: []string{
		lvmv1alpha1.CleanupFinalizerPrefix + "stays", lvmv1alpha1.CleanupFinalizerPrefix + "leaves",
		lvmv1alpha1.CleanupFinalizerPrefix + "never-existed",
	}}}
	if err := k8s.Create(ctx, vg); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "leaves"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{lvmv1alpha1.CleanupFinalizerPrefix + "stays"}
	err := wait.PollUntilContextTimeout(
		ctx,
		50*time.Millisecond,
		20*time.Second,
		true,
		func(ctx context.Context) (bool, error) {
			var got lvmv1alpha1.LVMVolumeGroup
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(vg), &got); err != nil {
				return false, err
			}
			gone := k8s.Get(
				ctx,
				client.ObjectKey{Namespace: ns, Name: "leaves"},
				&lvmv1alpha1.LVMVolumeGroupNodeStatus{},
			)
			return slices.Equal(got.Finalizers, want) && apierrors.IsNotFound(gone), nil
		},
	)
	if err != nil {
		var got lvmv1alpha1.LVMVolumeGroup
		_ = k8s.Get(ctx, client.ObjectKeyFromObject(vg), &got)
		t.Fatalf("finalizers %v, want %v: %v", got.Finalizers, want, err)
	}
	if err := k8s.Get(
		ctx,
		client.ObjectKey{Namespace: ns, Name: "stays"},
		&lvmv1alpha1.LVMVolumeGroupNodeStatus{},
	); err != nil {
		t.Errorf("status of a live node was touched: %v", err)
	}
}

// TestLogicalVolumesReleasedOnlyWithTheFlag: a LogicalVolume being deleted on a node that is gone
// keeps the node agent's finalizer unless the controller runs with --release-volumes-of-removed-nodes;
// with it, it is released and goes. One on a live node is never released.
func TestLogicalVolumesReleasedOnlyWithTheFlag(t *testing.T) {
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "alive"}}); err != nil {
		t.Fatal(err)
	}
	deleting := func(name, node string) *topolvmv1.LogicalVolume {
		lv := &topolvmv1.LogicalVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{topolvmv1.LogicalVolumeFinalizer}},
			Spec:       topolvmv1.LogicalVolumeSpec{Name: name, NodeName: node, Size: resource.MustParse("1Gi")},
		}
		if err := k8s.Create(ctx, lv); err != nil {
			t.Fatal(err)
		}
		if err := k8s.Delete(ctx, lv); err != nil {
			t.Fatal(err)
		}
		return lv
	}
	onGone, onAlive := deleting("lv-gone-node", "gone"), deleting("lv-alive-node", "alive")
	exists := func(lv *topolvmv1.LogicalVolume) bool {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(lv), &topolvmv1.LogicalVolume{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	reconcile := func(release bool, node string) {
		_, err := noderemoval.New(
			k8s,
			ns,
			noderemoval.Options{ReleaseVolumes: release},
		).Reconcile(
			ctx,
			ctrl.Request{NamespacedName: client.ObjectKey{Name: node}},
		)
		if err != nil {
			t.Fatalf("reconcile %s (release=%t): %v", node, release, err)
		}
	}

	reconcile(false, "gone")
	if !exists(onGone) {
		t.Fatal("released a LogicalVolume of a removed node without the flag")
	}
	reconcile(true, "alive")
	if !exists(onAlive) {
		t.Fatal("released a LogicalVolume of a live node")
	}
	reconcile(true, "gone")
	if exists(onGone) {
		t.Fatal("the flag did not release the LogicalVolume of the removed node")
	}
	// Leave nothing behind for the other tests.
	var lv topolvmv1.LogicalVolume
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(onAlive), &lv); err == nil {
		lv.Finalizers = nil
		_ = k8s.Update(ctx, &lv)
	}
}
