package envtest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/dev/internal/rbacdoc"
	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
)

// nodeNameExtra is the user extra the API server derives from a service account token bound to a
// pod on a node.
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// TestNodeAgentWritesOnlyItsNode installs the RBAC of each install path (config/rbac as kustomize
// and Helm install it, and the OLM bundle's CSV permissions as OLM turns them into roles) with the
// admission policy the operator writes (lvmcluster.NodeAgentPolicy), and impersonates the node
// agent of node "policy-a" (its token bound to that node): it may patch its Node, its
// LogicalVolumes, its LVMVolumeGroupNodeStatus and its own finalizer and marker on an
// LVMVolumeGroup, which RBAC alone grants for every node, and the policy refuses the same writes to
// node "policy-b"'s objects, any change of an LVMVolumeGroup's spec or of another node's finalizer
// or marker, and every write of a node agent whose token names no node.
func TestNodeAgentWritesOnlyItsNode(t *testing.T) {
	ctx := t.Context()
	ensureNamespace(ctx, t, testNamespace)
	createNodeObjects(ctx, t)
	installPolicy(ctx, t)
	paths := []struct {
		name string
		load func(t *testing.T) *rbacdoc.Set
	}{
		{"kustomize", func(t *testing.T) *rbacdoc.Set {
			set, err := rbacdoc.Load(filepath.Join("..", "..", "config", "rbac"), testNamespace)
			if err != nil {
				t.Fatal(err)
			}
			return set
		}},
		{"olm", olmRBAC},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			installRBAC(t.Context(), t, p.load(t))
			checkNodeAgentWrites(t)
		})
	}
}

// createNodeObjects creates, for nodes policy-a and policy-b, a Node, a LogicalVolume with a
// volume ID and an LVMVolumeGroupNodeStatus, and one LVMVolumeGroup that both nodes hold with
// their finalizer and wiped marker.
func createNodeObjects(ctx context.Context, t *testing.T) {
	t.Helper()
	vg := &lvmv1alpha1.LVMVolumeGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "policy-vg", Namespace: testNamespace},
		Spec: lvmv1alpha1.LVMVolumeGroupSpec{DeviceSelector: &lvmv1alpha1.DeviceSelector{
			Paths:                             []lvmv1alpha1.DevicePath{"/dev/sdb"},
			ForceWipeDevicesAndDestroyAllData: new(true),
		}},
	}
	for _, node := range []string{"policy-a", "policy-b"} {
		createAsAdmin(ctx, t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
		lv := &topolvmv1.LogicalVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "lv-" + node},
			Spec: topolvmv1.LogicalVolumeSpec{
				Name: "lv-" + node, NodeName: node, DeviceClass: "thin", Size: resource.MustParse("1Gi"),
			},
		}
		createAsAdmin(ctx, t, lv)
		lv.Status.VolumeID = "lv-" + node
		if err := k8s.Status().Update(ctx, lv); err != nil {
			t.Fatalf("set the volume ID of %s: %v", lv.Name, err)
		}
		createAsAdmin(ctx, t, &lvmv1alpha1.LVMVolumeGroupNodeStatus{
			ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: testNamespace},
		})
		vg.Finalizers = append(vg.Finalizers, lvmv1alpha1.CleanupFinalizerPrefix+node)
		metav1.SetMetaDataAnnotation(&vg.ObjectMeta, lvmv1alpha1.WipedAnnotationPrefix+node, "2026-11-28T00:00:00Z")
	}
	createAsAdmin(ctx, t, vg)
	t.Cleanup(func() {
		// The finalizers of the two nodes hold the deleted LVMVolumeGroup: drop them.
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
		if err := k8s.Patch(context.Background(), vg, patch); client.IgnoreNotFound(err) != nil {
			t.Errorf("drop the finalizers of %s: %v", vg.Name, err)
		}
	})
}

// nodeAgentCase is one dry-run write of the node agent and the policy's answer to it.
type nodeAgentCase struct {
	name    string
	c       client.Client
	obj     client.Object
	key, ns string
	status  bool   // the status subresource
	patch   string // a JSON merge patch; empty: an annotation
	refusal string // empty: allowed
}

// checkNodeAgentWrites runs the table of the node agent's writes as policy-a's agent and as an
// agent whose token names no node.
func checkNodeAgentWrites(t *testing.T) {
	ctx := t.Context()
	agent := nodeAgentOf(t, "policy-a")
	unbound := nodeAgentOf(t, "")
	// The policy and the roles reach the API server's admission and authorizer shortly after they
	// are created.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			own := nodeAgentCase{c: agent, obj: &corev1.Node{}, key: "policy-a"}
			other := nodeAgentCase{c: agent, obj: &corev1.Node{}, key: "policy-b"}
			return own.do(ctx) == nil && strings.Contains(errText(other.do(ctx)), "its own Node"), nil
		})
	if err != nil {
		t.Fatalf("the node agent of policy-a was never allowed its own Node and refused Node policy-b: %v", err)
	}
	const (
		dropOwnFinalizer   = `{"metadata":{"finalizers":["` + lvmv1alpha1.CleanupFinalizerPrefix + `policy-b"]}}`
		dropOtherFinalizer = `{"metadata":{"finalizers":["` + lvmv1alpha1.CleanupFinalizerPrefix + `policy-a"]}}`
		dropOwnMarker      = `{"metadata":{"annotations":{"` + lvmv1alpha1.WipedAnnotationPrefix + `policy-a":null}}}`
		dropOtherMarker    = `{"metadata":{"annotations":{"` + lvmv1alpha1.WipedAnnotationPrefix + `policy-b":null}}}`
		addPaths           = `{"spec":{"deviceSelector":{"paths":["/dev/sdb","/dev/sdc"]}}}`
		volumeID           = `{"status":{"volumeID":"someone-else"}}`
		vgRefusal          = "may change an LVMVolumeGroup only by its own finalizer"
	)
	lv, vg, nodeStatus := &topolvmv1.LogicalVolume{}, &lvmv1alpha1.LVMVolumeGroup{}, &lvmv1alpha1.LVMVolumeGroupNodeStatus{}
	cases := []nodeAgentCase{
		{name: "own Node", c: agent, obj: &corev1.Node{}, key: "policy-a"},
		{name: "other Node", c: agent, obj: &corev1.Node{}, key: "policy-b", refusal: "may write only its own Node"},
		{name: "own LogicalVolume", c: agent, obj: lv, key: "lv-policy-a"},
		{name: "other LogicalVolume", c: agent, obj: lv, key: "lv-policy-b",
			refusal: "only LogicalVolumes of its node"},
		{name: "other LogicalVolume's status", c: agent, obj: lv, key: "lv-policy-b", status: true,
			patch: `{"status":{"message":"failed"}}`, refusal: "only LogicalVolumes of its node"},
		{name: "own LogicalVolume's volume ID", c: agent, obj: lv, key: "lv-policy-a", status: true,
			patch: volumeID, refusal: "status.volumeID is set once"},
		{name: "own node status", c: agent, obj: nodeStatus, key: "policy-a", ns: testNamespace},
		{name: "other node status", c: agent, obj: nodeStatus, key: "policy-b", ns: testNamespace,
			refusal: "LVMVolumeGroupNodeStatus named after its node"},
		{name: "LVMVolumeGroup: drop own finalizer", c: agent, obj: vg, key: "policy-vg", ns: testNamespace,
			patch: dropOwnFinalizer},
		{name: "LVMVolumeGroup: drop own wiped marker", c: agent, obj: vg, key: "policy-vg", ns: testNamespace,
			patch: dropOwnMarker},
		{name: "LVMVolumeGroup: drop other node's finalizer", c: agent, obj: vg, key: "policy-vg", ns: testNamespace,
			patch: dropOtherFinalizer, refusal: vgRefusal},
		{name: "LVMVolumeGroup: drop other node's wiped marker", c: agent, obj: vg, key: "policy-vg",
			ns: testNamespace, patch: dropOtherMarker, refusal: vgRefusal},
		{name: "LVMVolumeGroup: add a disk to the spec", c: agent, obj: vg, key: "policy-vg", ns: testNamespace,
			patch: addPaths, refusal: vgRefusal},
		{name: "LVMVolumeGroup: an annotation of its own choice", c: agent, obj: vg, key: "policy-vg",
			ns: testNamespace, refusal: vgRefusal},
		{name: "token bound to no node", c: unbound, obj: &corev1.Node{}, key: "policy-a",
			refusal: "not bound to a node"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do(ctx)
			switch {
			case tt.refusal == "" && err != nil:
				t.Fatalf("patch %T %s: %v, want allowed", tt.obj, tt.key, err)
			case tt.refusal != "" && (err == nil || !strings.Contains(err.Error(), tt.refusal)):
				t.Fatalf("patch %T %s: %v, want refused with %q", tt.obj, tt.key, err, tt.refusal)
			}
			t.Logf("patch %T %s: %s", tt.obj, tt.key, orOK(err))
		})
	}
}

// installPolicy applies, as the admin, the admission policy the operator writes for the operator
// namespace, and deletes it when the test ends. (Its type-check report in status comes from
// kube-controller-manager, which envtest does not run; an expression that does not compile
// refuses every write, which the allowed cases catch.)
func installPolicy(ctx context.Context, t *testing.T) {
	t.Helper()
	owner := &lvmv1alpha1.LVMCluster{ObjectMeta: metav1.ObjectMeta{Name: "policy-test", Namespace: testNamespace}}
	policy, binding := lvmcluster.NodeAgentPolicy(owner, testNamespace)
	var objs []*unstructured.Unstructured
	for _, ac := range []any{policy, binding} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ac)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	applyAsAdmin(ctx, t, objs, "node-policy-test")
}

// createAsAdmin creates obj and deletes it when the test ends.
func createAsAdmin(ctx context.Context, t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() {
		if err := k8s.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %T %s: %v", obj, obj.GetName(), err)
		}
	})
}

// nodeAgentOf is a client acting as the node agent's service account with a token bound to node
// (none when node is empty).
func nodeAgentOf(t *testing.T, node string) client.Client {
	t.Helper()
	var extra map[string][]string
	if node != "" {
		extra = map[string][]string{nodeNameExtra: {node}}
	}
	return newImpersonatorWithExtra(t, "lvms-node", extra).c
}

// do makes the case's write as a dry run: its merge patch, or an annotation, of the object key (in
// namespace ns), or of its status.
func (c nodeAgentCase) do(ctx context.Context) error {
	c.obj.SetName(c.key)
	c.obj.SetNamespace(c.ns)
	body := c.patch
	if body == "" {
		body = `{"metadata":{"annotations":{"lvms.test/policy":"x"}}}`
	}
	patch := client.RawPatch(types.MergePatchType, []byte(body))
	if c.status {
		return c.c.Status().Patch(ctx, c.obj, patch, client.DryRunAll)
	}
	return c.c.Patch(ctx, c.obj, patch, client.DryRunAll)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func orOK(err error) string {
	if err == nil {
		return "allowed (dry run)"
	}
	return err.Error()
}
