package noderemoval_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/noderemoval"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// claimNamespace holds the test claims, as a user's namespace would.
const claimNamespace = "default"

// TestClaimsDeletedOnlyWithTheFlag: the claim bound to a topolvm.io volume of a node that is gone is
// deleted only by a controller running with --delete-claims-of-removed-nodes; the manager started by
// TestMain (the default, without it) leaves it when the node goes. A claim on a live node's volume,
// one on another driver's volume of the removed node, and one whose UID is not the volume's
// claimRef (a claim of the same name created anew) are never deleted.
func TestClaimsDeletedOnlyWithTheFlag(t *testing.T) {
	ctx := t.Context()
	for _, n := range []string{"claims-alive", "claims-gone"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if err := k8s.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), node) })
	}
	status := &lvmv1alpha1.LVMVolumeGroupNodeStatus{ObjectMeta: metav1.ObjectMeta{Name: "claims-gone", Namespace: ns}}
	if err := k8s.Create(ctx, status); err != nil {
		t.Fatal(err)
	}
	gone := boundClaim(ctx, t, "on-gone-node", "claims-gone", driver.Name, false)
	alive := boundClaim(ctx, t, "on-alive-node", "claims-alive", driver.Name, false)
	otherDriver := boundClaim(ctx, t, "other-driver", "claims-gone", "other.csi.example.com", false)
	recreated := boundClaim(ctx, t, "recreated", "claims-gone", driver.Name, true)

	// The manager without the flag: once it has handled the node's deletion (its node status is
	// gone), the claim stays.
	if err := k8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "claims-gone"}}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true,
		func(ctx context.Context) (bool, error) {
			err := k8s.Get(ctx, client.ObjectKeyFromObject(status), &lvmv1alpha1.LVMVolumeGroupNodeStatus{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	if err != nil {
		t.Fatalf("the manager did not handle the removed node: %v", err)
	}
	time.Sleep(time.Second)
	if deleting(ctx, t, gone) {
		t.Fatal("the default manager deleted the claim of a removed node")
	}

	reconcile := func(opts noderemoval.Options, node string) {
		req := ctrl.Request{NamespacedName: client.ObjectKey{Name: node}}
		if _, err := noderemoval.New(k8s, ns, opts).Reconcile(ctx, req); err != nil {
			t.Fatalf("reconcile %s (%+v): %v", node, opts, err)
		}
	}
	reconcile(noderemoval.Options{ReleaseVolumes: true}, "claims-gone")
	if deleting(ctx, t, gone) {
		t.Fatal("deleted the claim of a removed node without the flag")
	}
	reconcile(noderemoval.Options{DeleteClaims: true}, "claims-alive")
	if deleting(ctx, t, alive) {
		t.Fatal("deleted the claim of a live node")
	}
	reconcile(noderemoval.Options{DeleteClaims: true}, "claims-gone")
	if !deleting(ctx, t, gone) {
		t.Fatal("the flag did not delete the claim of the removed node")
	}
	// Again, with the claim being deleted (or gone): nothing to do, no error.
	reconcile(noderemoval.Options{DeleteClaims: true}, "claims-gone")
	for what, pvc := range map[string]*corev1.PersistentVolumeClaim{
		"of a live node": alive,
		"of another driver's volume on the removed node": otherDriver,
		"whose UID is not the volume's claimRef":         recreated,
	} {
		if deleting(ctx, t, pvc) {
			t.Errorf("deleted the claim %s", what)
		}
	}
}

// boundClaim creates a claim and the volume of driver bound to it, pinned to node with the CSI
// topology key. With staleRef, the volume's claimRef has another UID than the claim: it was bound
// to an earlier claim of the same name.
func boundClaim(
	ctx context.Context,
	t *testing.T,
	name, node, driverName string,
	staleRef bool,
) *corev1.PersistentVolumeClaim {
	t.Helper()
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: claimNamespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: rwo,
			Resources:   corev1.VolumeResourceRequirements{Requests: size},
			VolumeName:  "pv-" + name,
		},
	}
	if err := k8s.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	uid := pvc.UID
	if staleRef {
		uid = types.UID("an-earlier-claim-of-the-same-name")
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      size,
			AccessModes:                   rwo,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: driverName, VolumeHandle: name},
			},
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: claimNamespace, Name: name, UID: uid,
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: driver.TopologyNodeKey, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}},
		},
	}
	if err := k8s.Create(ctx, pv); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, o := range []client.Object{pvc, pv} {
			// pvc-protection and pv-protection finalizers: no controller-manager removes them here.
			_ = k8s.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
			_ = k8s.Delete(ctx, o)
		}
	})
	return pvc
}

// deleting tells whether the claim is gone or being deleted.
func deleting(ctx context.Context, t *testing.T, pvc *corev1.PersistentVolumeClaim) bool {
	t.Helper()
	var got corev1.PersistentVolumeClaim
	err := k8s.Get(ctx, client.ObjectKeyFromObject(pvc), &got)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return !got.DeletionTimestamp.IsZero()
}
