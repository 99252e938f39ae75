package controller

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// Reasons of adverse volume health the Controller service reports (CSI 1.13's controller volume
// health RPCs; the node's own NodeGetVolumeHealth adds what only the node sees).
const (
	// ReasonNodeNotFound: the volume's node has no Node object any more (INACCESSIBLE).
	ReasonNodeNotFound = "NodeNotFound"
	// ReasonNodeNotReady: the volume's node is not Ready (INACCESSIBLE).
	ReasonNodeNotReady = "NodeNotReady"
	// ReasonVolumeGroupFailed: the node agent reports the device class's volume group Failed
	// (INACCESSIBLE).
	ReasonVolumeGroupFailed = "VolumeGroupFailed"
	// ReasonVolumeGroupDegraded: the volume group is Degraded, e.g. a disk missing or its thin pool
	// nearly full (DEGRADED).
	ReasonVolumeGroupDegraded = "VolumeGroupDegraded"
	// ReasonRAIDUnhealthy: lvm2 reports the volume's RAID LV partial, needing a refresh or with
	// mismatches between its legs (DEGRADED).
	ReasonRAIDUnhealthy = "RAIDUnhealthy"
)

// ControllerGetVolumeHealth reports what the cluster knows of a volume's health: its node gone or
// not Ready, its volume group Failed or Degraded, its RAID LV unhealthy (from the node's
// LVMVolumeGroupNodeStatus). An empty list means nothing adverse is known. NotFound when no volume
// has the ID.
func (s *Server) ControllerGetVolumeHealth(
	ctx context.Context,
	req *csi.ControllerGetVolumeHealthRequest,
) (*csi.ControllerGetVolumeHealthResponse, error) {
	lv, err := s.volumeByID(ctx, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	h, err := s.volumeHealth(ctx, lv, nil)
	if err != nil {
		return nil, rpcError(err)
	}
	return &csi.ControllerGetVolumeHealthResponse{VolumeHealth: h}, nil
}

// ControllerListVolumeHealth lists the volumes with an adverse health condition (only those, as the
// spec asks), in volume ID order, a page of max_entries at a time.
func (s *Server) ControllerListVolumeHealth(
	ctx context.Context,
	req *csi.ControllerListVolumeHealthRequest,
) (*csi.ControllerListVolumeHealthResponse, error) {
	var firstErr error
	healths, seen := map[string]*csi.VolumeHealth{}, map[string]nodeState{}
	lvs, next, err := s.page(ctx, req.GetStartingToken(), req.GetMaxEntries(), func(lv *topolvmv1.LogicalVolume) bool {
		if lv.Spec.AccessType == topolvmv1.AccessTypeReadOnly || firstErr != nil {
			return false
		}
		h, err := s.volumeHealth(ctx, lv, seen)
		if err != nil {
			firstErr = err
			return false
		}
		healths[lv.Status.VolumeID] = h
		return len(h.HealthStatuses) > 0
	})
	if err == nil {
		err = firstErr
	}
	if err != nil {
		return nil, rpcError(err)
	}
	resp := &csi.ControllerListVolumeHealthResponse{NextToken: next}
	for _, lv := range lvs {
		resp.Entries = append(resp.Entries, healths[lv.Status.VolumeID])
	}
	return resp, nil
}

// nodeState is what the health of a node's volumes is judged by: its Node (nil: none) and its
// LVMVolumeGroupNodeStatus (nil: none, or no namespace to read it in).
type nodeState struct {
	node   *corev1.Node
	status *lvmv1alpha1.LVMVolumeGroupNodeStatus
}

// volumeHealth judges lv with healthOf by its node's state, read from the cache once per node of a
// call (seen, when not nil, keeps what was read).
func (s *Server) volumeHealth(ctx context.Context, lv *topolvmv1.LogicalVolume,
	seen map[string]nodeState) (*csi.VolumeHealth, error) {
	st, ok := seen[lv.Spec.NodeName]
	if !ok {
		var err error
		if st, err = s.readNodeState(ctx, lv.Spec.NodeName); err != nil {
			return nil, err
		}
		if seen != nil {
			seen[lv.Spec.NodeName] = st
		}
	}
	return &csi.VolumeHealth{VolumeId: lv.Status.VolumeID, HealthStatuses: healthOf(lv, st.node, st.status)}, nil
}

// readNodeState reads a node's Node and, in s.namespace, its LVMVolumeGroupNodeStatus from the cache.
func (s *Server) readNodeState(ctx context.Context, name string) (nodeState, error) {
	st := nodeState{node: &corev1.Node{}}
	switch err := s.cache.Get(ctx, client.ObjectKey{Name: name}, st.node); {
	case apierrors.IsNotFound(err):
		st.node = nil
	case err != nil:
		return st, fmt.Errorf("get Node %s: %w", name, err)
	}
	if s.namespace == "" {
		return st, nil
	}
	st.status = &lvmv1alpha1.LVMVolumeGroupNodeStatus{}
	key := client.ObjectKey{Namespace: s.namespace, Name: name}
	switch err := s.cache.Get(ctx, key, st.status); {
	case apierrors.IsNotFound(err):
		st.status = nil
	case err != nil:
		return st, fmt.Errorf("get LVMVolumeGroupNodeStatus %s: %w", key, err)
	}
	return st, nil
}

// healthOf judges a volume by its node (nil: no Node object) and that node's LVMVolumeGroupNodeStatus
// (nil: none). A node without a Ready condition yet, a status without the volume's device class,
// and a LogicalVolume without a device class (the default one, which only the node resolves) add
// nothing: only what is known to be wrong is reported.
func healthOf(lv *topolvmv1.LogicalVolume, node *corev1.Node,
	nodeStatus *lvmv1alpha1.LVMVolumeGroupNodeStatus) []*csi.VolumeHealth_VolumeHealthEntry {
	var out []*csi.VolumeHealth_VolumeHealthEntry
	add := func(t csi.VolumeHealthErrorType, reason, format string, args ...any) {
		out = append(out, &csi.VolumeHealth_VolumeHealthEntry{Status: t, Reason: reason,
			Message: fmt.Sprintf(format, args...)})
	}
	if node == nil {
		add(csi.VolumeHealthErrorType_INACCESSIBLE, ReasonNodeNotFound, "node %s does not exist", lv.Spec.NodeName)
		return out
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			add(csi.VolumeHealthErrorType_INACCESSIBLE, ReasonNodeNotReady, "node %s is not Ready (%s): %s",
				lv.Spec.NodeName, c.Reason, c.Message)
		}
	}
	if nodeStatus == nil || lv.Spec.DeviceClass == "" {
		return out
	}
	for _, vg := range nodeStatus.Spec.LiveNodeStatus {
		if vg.Name != lv.Spec.DeviceClass {
			continue
		}
		switch vg.Status {
		case lvmv1alpha1.VGStatusFailed:
			add(csi.VolumeHealthErrorType_INACCESSIBLE, ReasonVolumeGroupFailed,
				"volume group %s on node %s failed: %s", vg.Name, lv.Spec.NodeName, vg.Reason)
		case lvmv1alpha1.VGStatusDegraded:
			add(csi.VolumeHealthErrorType_DEGRADED, ReasonVolumeGroupDegraded,
				"volume group %s on node %s is degraded: %s", vg.Name, lv.Spec.NodeName, vg.Reason)
		}
		if vg.RAIDStatus == nil {
			continue
		}
		name := lv.Status.VolumeID // the LV's name on its node (only volumes with an LV come here)
		for _, h := range vg.RAIDStatus.LVHealth {
			if h.Name == name && h.HealthStatus != "" {
				add(csi.VolumeHealthErrorType_DEGRADED, ReasonRAIDUnhealthy, "%s LV %s: %s (in sync %d%%)",
					h.RAIDType, name, h.HealthStatus, h.SyncPercent)
			}
		}
	}
	return out
}
