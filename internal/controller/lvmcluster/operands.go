package lvmcluster

import (
	"context"
	"encoding/json"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	storagev1ac "k8s.io/client-go/applyconfigurations/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// unit is one named operand: apply writes it from the LVMCluster; remove deletes it and reports
// whether it is gone.
type unit struct {
	name   string
	apply  func(ctx context.Context, s *scope) error
	remove func(ctx context.Context, s *scope) (gone bool, err error)
}

// units are the operands in apply order. Teardown runs them in reverse: the volume groups go first
// (while the node agents that tear them down still run), the CSIDriver last.
func units() []unit {
	return []unit{
		// First: the node agents are bounded to their nodes before any of them runs.
		{name: unitNodeAgentPolicy, apply: applyNodeAgentPolicy, remove: removeNodeAgentPolicy},
		{name: "CSIDriver", apply: applyCSIDriver, remove: removeCSIDriver},
		{name: "SecurityContextConstraints", apply: applySCC, remove: removeSCC},
		{name: "StorageClasses", apply: applyStorageClasses, remove: removeLabelled(&storagev1.StorageClassList{})},
		{name: "VolumeSnapshotClasses", apply: applySnapshotClasses, remove: removeSnapshotClasses},
		{name: "NodeDaemonSet", apply: applyNodeDaemonSet, remove: removeNodeDaemonSet},
		{name: "SnapshotMetadata", apply: applySnapshotMetadata, remove: removeSnapshotMetadata},
		{name: unitVolumeGroups, apply: applyVolumeGroups, remove: removeVolumeGroups},
	}
}

func csiDriverFor(c *lvmv1alpha1.LVMCluster) *storagev1ac.CSIDriverApplyConfiguration {
	return storagev1ac.CSIDriver(driver.Name).
		WithLabels(ownerLabels(c)).
		WithSpec(storagev1ac.CSIDriverSpec().
			WithAttachRequired(false).
			WithPodInfoOnMount(true).
			WithStorageCapacity(true).
			WithFSGroupPolicy(storagev1.FileFSGroupPolicy).
			WithVolumeLifecycleModes(storagev1.VolumeLifecyclePersistent))
}

func applyCSIDriver(ctx context.Context, s *scope) error {
	if err := applyOperand(ctx, s.client, csiDriverFor(s.cluster)); err != nil {
		return fmt.Errorf("apply CSIDriver %s: %w", driver.Name, err)
	}
	return nil
}

// applyOperand writes an operand with server-side apply as FieldOwner and then stamps the object
// with its own UID (AnnotationOperandUID) when it does not carry it yet: at its creation, or when
// it was made by an earlier version or recreated by someone else under our name.
func applyOperand(ctx context.Context, cl client.Client, ac runtime.ApplyConfiguration) error {
	if err := cl.Apply(ctx, ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return err
	}
	// Apply decoded the server's answer into ac, typed or unstructured; its JSON has the metadata.
	raw, err := json.Marshal(ac)
	if err != nil {
		return fmt.Errorf("read applied object: %w", err)
	}
	var live metav1.PartialObjectMetadata
	if err := json.Unmarshal(raw, &live); err != nil {
		return fmt.Errorf("read applied object: %w", err)
	}
	if live.UID == "" || madeByOperator(&live) {
		return nil
	}
	stamp := &unstructured.Unstructured{}
	stamp.SetAPIVersion(live.APIVersion)
	stamp.SetKind(live.Kind)
	stamp.SetName(live.Name)
	stamp.SetNamespace(live.Namespace)
	// The UID in an apply is a precondition: a stamp never lands on an object recreated meanwhile.
	stamp.SetUID(live.UID)
	stamp.SetAnnotations(map[string]string{AnnotationOperandUID: string(live.UID)})
	if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(stamp),
		client.FieldOwner(StampFieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("stamp %s %s with its UID: %w", live.Kind, live.Name, err)
	}
	return nil
}

// madeByOperator reports whether obj is the very object the operator made: its stamp is its own
// UID. Labels alone cannot tell, as a copy of an operand inherits them.
func madeByOperator(obj metav1.Object) bool {
	uid := obj.GetUID()
	return uid != "" && obj.GetAnnotations()[AnnotationOperandUID] == string(uid)
}

func removeCSIDriver(ctx context.Context, s *scope) (bool, error) {
	d := &storagev1.CSIDriver{}
	d.Name = driver.Name
	return deleteObject(ctx, s.client, d)
}

// deleteObject deletes obj and reports whether it is gone (a 404 counts as gone).
func deleteObject(ctx context.Context, cl client.Client, obj client.Object, opts ...client.DeleteOption) (bool, error) {
	err := cl.Delete(ctx, obj, append(opts, client.PropagationPolicy("Background"))...)
	switch {
	case err == nil:
		return false, nil
	case client.IgnoreNotFound(err) == nil || meta.IsNoMatchError(err):
		return true, nil
	default:
		return false, fmt.Errorf("delete %T %s: %w", obj, obj.GetName(), err)
	}
}

// ownedListOptions select the operands labelled with this LVMCluster.
func ownedListOptions(c *lvmv1alpha1.LVMCluster) client.MatchingLabels {
	return client.MatchingLabels{LabelOwnerName: c.Name, LabelOwnerNamespace: c.Namespace}
}

// deleteStale deletes the operands of the list's kind that the operator made (madeByOperator)
// and whose names are not wanted. Objects that only carry our labels, such as a user's copy of a
// StorageClass under another name, are never touched.
func deleteStale(
	ctx context.Context,
	s *scope,
	list client.ObjectList,
	wanted map[string]bool,
	opts ...client.ListOption,
) error {
	opts = append(opts, ownedListOptions(s.cluster))
	if err := s.client.List(ctx, list, opts...); err != nil {
		if meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("list %T: %w", list, err)
	}
	return meta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok || wanted[obj.GetName()] || !madeByOperator(obj) {
			return nil
		}
		uid := obj.GetUID()
		_, err := deleteObject(ctx, s.client, obj, client.Preconditions{UID: &uid})
		return err
	})
}

// removeLabelled returns a remove func deleting every operand of the list's kind that the
// operator made; it is done when none of those is left (copies stay, and do not hold it up).
func removeLabelled(list client.ObjectList, opts ...client.ListOption) func(context.Context, *scope) (bool, error) {
	return func(ctx context.Context, s *scope) (bool, error) {
		if err := deleteStale(ctx, s, list, nil, opts...); err != nil {
			return false, err
		}
		if err := s.client.List(ctx, list, append(opts, ownedListOptions(s.cluster))...); err != nil {
			if meta.IsNoMatchError(err) {
				return true, nil
			}
			return false, fmt.Errorf("list %T: %w", list, err)
		}
		left := 0
		err := meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok && madeByOperator(obj) {
				left++
			}
			return nil
		})
		return left == 0, err
	}
}

// served reports whether the API server serves the kind (an optional API such as snapshots or
// OpenShift's SCCs). A kind found absent is taken as absent for absentRecheck: controller-runtime's
// mapper answers a kind it does not know by reading the whole discovery again, and on a cluster
// without SCCs that happened in every reconcile.
func (s *scope) served(gvk schema.GroupVersionKind) (bool, error) {
	if s.absent.recent(gvk) {
		return false, nil
	}
	_, err := s.client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		s.absent.record(gvk)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", gvk, err)
	}
	return true, nil
}
