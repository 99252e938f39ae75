package mobility

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// bind creates the new PV, pre-bound to the claim, deletes the claim and creates it again bound to the
// new PV, and waits until it is Bound. Whoever creates the claim again first (this command, or a
// StatefulSet controller from its template), the PV controller binds it to the new PV: a PV pre-bound
// to a claim's name is that claim's.
func (m *mover) bind(ctx context.Context) error {
	pv := m.desiredPV()
	if err := m.c.Create(ctx, pv, client.FieldOwner(MoveFieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PV %s: %w", pv.Name, err)
	}
	key := client.ObjectKey{Namespace: m.opts.Namespace, Name: m.opts.Claim}
	claim := &corev1.PersistentVolumeClaim{}
	err := m.c.Get(ctx, key, claim)
	if err == nil && claim.Spec.VolumeName == m.s.oldPV.Name {
		if err := m.c.Delete(ctx, claim, client.Preconditions{UID: &claim.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete claim %s: %w", key, err)
		}
		m.say("Deleted claim %s (its data stays in PV %s until the move is done).", key, m.s.oldPV.Name)
		err = m.poll(ctx, func(ctx context.Context) (bool, error) {
			err := m.c.Get(ctx, key, claim)
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return err == nil && claim.Spec.VolumeName != m.s.oldPV.Name, err
		})
		if err != nil {
			return fmt.Errorf("wait for claim %s to be deleted: %w", key, err)
		}
		err = m.c.Get(ctx, key, claim)
	}
	if apierrors.IsNotFound(err) {
		if err = m.createClaim(ctx); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("read claim %s: %w", key, err)
	}
	return m.poll(ctx, func(ctx context.Context) (bool, error) {
		if err := m.c.Get(ctx, key, claim); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if claim.Spec.VolumeName != "" && claim.Spec.VolumeName != pv.Name {
			return false, fmt.Errorf("claim %s was created again by someone else and bound to PV %s",
				key, claim.Spec.VolumeName)
		}
		return claim.Status.Phase == corev1.ClaimBound, nil
	})
}

// createClaim creates the claim as recorded on the old PV, bound to the new PV.
func (m *mover) createClaim(ctx context.Context) error {
	claim, err := savedClaim(m.s.oldPV)
	if err != nil {
		return err
	}
	claim.Spec.VolumeName = m.s.newName
	if err := m.c.Create(
		ctx,
		claim,
		client.FieldOwner(MoveFieldManager),
	); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	m.say("Created claim %s/%s, bound to PV %s on node %s.", claim.Namespace, claim.Name, m.s.newName, m.s.to)
	return nil
}

// desiredPV is the new PV: the old one's spec on the target node, with the new volume, pre-bound to
// the claim, Retain until the move is done.
func (m *mover) desiredPV() *corev1.PersistentVolume {
	old := m.s.oldPV
	spec := *old.Spec.DeepCopy()
	spec.CSI.VolumeHandle = m.newLV.Status.VolumeID
	spec.ClaimRef = &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim",
		Namespace: m.opts.Namespace, Name: m.opts.Claim}
	spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: driver.TopologyNodeKey, Operator: corev1.NodeSelectorOpIn, Values: []string{m.s.to},
		}}}},
	}}
	if c := m.newLV.Status.CurrentSize; c != nil {
		spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: *c}
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: m.s.newName, Labels: old.Labels, Annotations: map[string]string{
			provisionedByAnnotation: driver.Name, moveFromAnnotation: old.Name,
		}},
		Spec: spec,
	}
}

// finish uncordons the source node if the move cordoned it, gives the new PV the old one's reclaim
// policy, and deletes the old PV and its volume (reclaim policy Delete: the provisioner removes the
// LV), waiting until it is gone.
func (m *mover) finish(ctx context.Context) error {
	old := m.s.oldPV
	if old.Annotations[moveCordonAnnotation] == "true" {
		if err := m.setUnschedulable(ctx, m.s.from, false); err != nil {
			return err
		}
	}
	newPV := &corev1.PersistentVolume{}
	if err := m.c.Get(ctx, client.ObjectKey{Name: m.s.newName}, newPV); err != nil {
		return fmt.Errorf("read PV %s: %w", m.s.newName, err)
	}
	if p := m.s.reclaimPolicy(); p != "" && p != newPV.Spec.PersistentVolumeReclaimPolicy {
		base := newPV.DeepCopy()
		newPV.Spec.PersistentVolumeReclaimPolicy = p
		if err := m.c.Patch(ctx, newPV, client.MergeFrom(base), client.FieldOwner(MoveFieldManager)); err != nil {
			return fmt.Errorf("set the reclaim policy of PV %s: %w", newPV.Name, err)
		}
	}
	if err := m.deleteOldPV(ctx); err != nil {
		return err
	}
	base := newPV.DeepCopy()
	delete(newPV.Annotations, moveFromAnnotation)
	if err := m.c.Patch(ctx, newPV, client.MergeFrom(base), client.FieldOwner(MoveFieldManager)); err != nil {
		return fmt.Errorf("annotate PV %s: %w", newPV.Name, err)
	}
	return nil
}

// deleteOldPV has the provisioner delete the old PV and its LV (reclaim policy Delete on a Released PV)
// and waits until the PV is gone.
func (m *mover) deleteOldPV(ctx context.Context) error {
	old := &corev1.PersistentVolume{}
	err := m.c.Get(ctx, client.ObjectKey{Name: m.s.oldPV.Name}, old)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read PV %s: %w", m.s.oldPV.Name, err)
	}
	if old.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		base := old.DeepCopy()
		old.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
		if err := m.c.Patch(ctx, old, client.MergeFrom(base), client.FieldOwner(MoveFieldManager)); err != nil {
			return fmt.Errorf("set the reclaim policy of PV %s to Delete: %w", old.Name, err)
		}
	}
	err = m.poll(ctx, func(ctx context.Context) (bool, error) {
		err := m.c.Get(ctx, client.ObjectKey{Name: old.Name}, old)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("wait for PV %s and its volume on node %s to be deleted: %w", old.Name, m.s.from, err)
	}
	m.say("Deleted PV %s and its volume on node %s.", old.Name, m.s.from)
	return nil
}
