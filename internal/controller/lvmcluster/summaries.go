package lvmcluster

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	lvmv1alpha1ac "github.com/lvm-operator/lvm-operator/api/v1alpha1/applyconfiguration/api/v1alpha1"
)

// classCondition is the VolumeGroupsReady condition of one device class's LVMVolumeGroup: the same
// summary as the LVMCluster's, over that class's nodes only.
func classCondition(dcs lvmv1alpha1.DeviceClassStatus) metav1.Condition {
	worst := map[lvmv1alpha1.VGStatusType][]string{}
	for _, ns := range dcs.NodeStatus {
		if ns.Status != lvmv1alpha1.VGStatusReady {
			worst[ns.Status] = append(worst[ns.Status], describe(ns.Node, dcs.Name, ns.VGStatus))
		}
	}
	_, cond := summarise(worst, len(dcs.NodeStatus))
	return cond
}

// applyVolumeGroupConditions writes each device class's condition on its LVMVolumeGroup, where it
// changed. A class whose LVMVolumeGroup is not in the cache yet gets it on a later reconcile (the
// node agents' first report triggers one).
func applyVolumeGroupConditions(ctx context.Context, s *scope, classes []lvmv1alpha1.DeviceClassStatus) error {
	var list lvmv1alpha1.LVMVolumeGroupList
	if err := s.client.List(ctx, &list, client.InNamespace(s.opts.Namespace)); err != nil {
		return fmt.Errorf("list LVMVolumeGroups: %w", err)
	}
	var errs []error
	for _, dcs := range classes {
		i := indexOf(list.Items, dcs.Name)
		if i < 0 || !list.Items[i].DeletionTimestamp.IsZero() {
			continue
		}
		vg := &list.Items[i]
		cond := classCondition(dcs)
		cond.ObservedGeneration = vg.Generation
		old := meta.FindStatusCondition(vg.Status.Conditions, cond.Type)
		if old != nil && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message &&
			old.ObservedGeneration == cond.ObservedGeneration {
			continue
		}
		changed := metav1.Now()
		if old != nil && old.Status == cond.Status {
			changed = old.LastTransitionTime
		}
		ac := lvmv1alpha1ac.LVMVolumeGroup(vg.Name, vg.Namespace).WithStatus(
			lvmv1alpha1ac.LVMVolumeGroupStatus().WithConditions(metav1ac.Condition().
				WithType(cond.Type).WithStatus(cond.Status).WithReason(cond.Reason).WithMessage(cond.Message).
				WithObservedGeneration(cond.ObservedGeneration).WithLastTransitionTime(changed)))
		if err := s.client.Status().Apply(ctx, ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			errs = append(errs, fmt.Errorf("apply status of LVMVolumeGroup %s/%s: %w", vg.Namespace, vg.Name, err))
		}
	}
	return errors.Join(errs...)
}

func indexOf(vgs []lvmv1alpha1.LVMVolumeGroup, name string) int {
	for i := range vgs {
		if vgs[i].Name == name {
			return i
		}
	}
	return -1
}

// nodeSummary condenses a node's report into what `kubectl get lvmvolumegroupnodestatus` shows.
func nodeSummary(r *lvmv1alpha1.LVMVolumeGroupNodeStatus) lvmv1alpha1.LVMVolumeGroupNodeStatusStatus {
	rank := map[lvmv1alpha1.VGStatusType]int{
		lvmv1alpha1.VGStatusReady: 0, lvmv1alpha1.VGStatusProgressing: 1,
		lvmv1alpha1.VGStatusDegraded: 2, lvmv1alpha1.VGStatusFailed: 3,
	}
	out := lvmv1alpha1.LVMVolumeGroupNodeStatusStatus{State: lvmv1alpha1.VGStatusReady}
	ready := 0
	var msgs []string
	for _, vg := range r.Spec.LiveNodeStatus {
		st := vg.Status
		if st == "" {
			st = lvmv1alpha1.VGStatusProgressing
		}
		if st == lvmv1alpha1.VGStatusReady {
			ready++
			continue
		}
		if rank[st] > rank[out.State] {
			out.State = st
		}
		msg := fmt.Sprintf("%s: %s", vg.Name, st)
		if vg.Reason != "" {
			msg += ": " + vg.Reason
		}
		msgs = append(msgs, msg)
	}
	if len(r.Spec.LiveNodeStatus) == 0 {
		out.State = lvmv1alpha1.VGStatusProgressing
	}
	out.Ready = fmt.Sprintf("%d/%d", ready, len(r.Spec.LiveNodeStatus))
	out.Message = joinCapped(msgs, maxConditionItems)
	return out
}

// applyNodeSummaries writes the summary of every node's report where it changed.
func applyNodeSummaries(ctx context.Context, s *scope, reports []lvmv1alpha1.LVMVolumeGroupNodeStatus) error {
	var errs []error
	for i := range reports {
		r := &reports[i]
		sum := nodeSummary(r)
		if sum == r.Status || !r.DeletionTimestamp.IsZero() {
			continue
		}
		st := lvmv1alpha1ac.LVMVolumeGroupNodeStatusStatus().WithState(sum.State).WithReady(sum.Ready)
		if sum.Message != "" {
			st.WithMessage(sum.Message)
		}
		ac := lvmv1alpha1ac.LVMVolumeGroupNodeStatus(r.Name, r.Namespace).WithStatus(st)
		if err := s.client.Status().Apply(ctx, ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			errs = append(
				errs,
				fmt.Errorf("apply status of LVMVolumeGroupNodeStatus %s/%s: %w", r.Namespace, r.Name, err),
			)
		}
	}
	return errors.Join(errs...)
}
