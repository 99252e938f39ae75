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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/dev/kustomize"
	"github.com/lvm-operator/lvm-operator/internal/dev/rbacdoc"
)

// nodeNameExtra is the user extra the API server derives from a service account token bound to a
// pod on a node.
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// TestNodeAgentWritesOnlyItsNode installs the RBAC of config/rbac and the admission policy of
// config/policy, and impersonates the node agent of node "policy-a" (its token bound to that node):
// it may patch its Node, its LogicalVolumes and its LVMVolumeGroupNodeStatus, which RBAC alone
// grants for every node, and the policy refuses the same writes to node "policy-b"'s objects, and
// every write of a node agent whose token names no node.
func TestNodeAgentWritesOnlyItsNode(t *testing.T) {
	ctx := t.Context()
	set, err := rbacdoc.Load(filepath.Join("..", "..", "config", "rbac"), testNamespace)
	if err != nil {
		t.Fatal(err)
	}
	ensureNamespace(ctx, t, testNamespace)
	installRBAC(ctx, t, set)
	installPolicy(ctx, t)
	for _, node := range []string{"policy-a", "policy-b"} {
		createAsAdmin(ctx, t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
		createAsAdmin(ctx, t, &topolvmv1.LogicalVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "lv-" + node},
			Spec: topolvmv1.LogicalVolumeSpec{
				Name: "lv-" + node, NodeName: node, DeviceClass: "thin", Size: resource.MustParse("1Gi"),
			},
		})
		createAsAdmin(ctx, t, &lvmv1alpha1.LVMVolumeGroupNodeStatus{
			ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: testNamespace},
		})
	}
	agent := nodeAgentOf(t, "policy-a")
	unbound := nodeAgentOf(t, "")

	// The policy reaches the API server's admission shortly after it is created.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			return strings.Contains(errText(annotate(ctx, agent, &corev1.Node{}, "policy-b", "")), "its own Node"), nil
		})
	if err != nil {
		t.Fatalf("the policy never refused the node agent of policy-a a patch of Node policy-b: %v", err)
	}
	tests := []struct {
		name    string
		c       client.Client
		obj     client.Object
		key     string
		ns      string
		refusal string // empty: allowed
	}{
		{"own Node", agent, &corev1.Node{}, "policy-a", "", ""},
		{"other Node", agent, &corev1.Node{}, "policy-b", "", "may write only its own Node"},
		{"own LogicalVolume", agent, &topolvmv1.LogicalVolume{}, "lv-policy-a", "", ""},
		{
			"other LogicalVolume",
			agent,
			&topolvmv1.LogicalVolume{},
			"lv-policy-b",
			"",
			"only LogicalVolumes of its node",
		},
		{"own node status", agent, &lvmv1alpha1.LVMVolumeGroupNodeStatus{}, "policy-a", testNamespace, ""},
		{"other node status", agent, &lvmv1alpha1.LVMVolumeGroupNodeStatus{}, "policy-b", testNamespace,
			"LVMVolumeGroupNodeStatus named after its node"},
		{"token bound to no node", unbound, &corev1.Node{}, "policy-a", "", "not bound to a node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := annotate(ctx, tt.c, tt.obj, tt.key, tt.ns)
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

// installPolicy applies config/policy as the admin and deletes it when the test ends.
func installPolicy(ctx context.Context, t *testing.T) {
	t.Helper()
	out, err := kustomize.Build(filepath.Join("..", "..", "config", "policy"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kustomize.Decode(out)
	if err != nil {
		t.Fatal(err)
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

// annotate patches an annotation onto the object key (in namespace ns), as a dry run.
func annotate(ctx context.Context, c client.Client, obj client.Object, key, ns string) error {
	obj.SetName(key)
	obj.SetNamespace(ns)
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"lvms.test/policy":"x"}}}`))
	return c.Patch(ctx, obj, patch, client.DryRunAll)
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
