package controller

import (
	"context"
	"fmt"
	"math"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// GetCapacity reports the free bytes of a device class from the nodes' capacity annotations: of the
// node named by the topology segment, or the sum over all nodes when no topology is given.
// MaximumVolumeSize is the largest free space of one node (a volume never spans nodes).
func (s *Server) GetCapacity(ctx context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	if caps := req.GetVolumeCapabilities(); len(caps) > 0 {
		if err := lvmcsi.ValidateCapabilities(caps); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	dc := req.GetParameters()[driver.ParamDeviceClass]
	if segs := req.GetAccessibleTopology().GetSegments(); len(segs) > 0 {
		node, ok := segs[driver.TopologyNodeKey]
		if !ok {
			return &csi.GetCapacityResponse{}, nil
		}
		free, err := s.nodeCapacity(ctx, node, dc)
		if err != nil {
			return nil, rpcError(err)
		}
		return capacityResponse(free, free), nil
	}
	capacities, err := s.capacities(ctx, dc)
	if err != nil {
		return nil, rpcError(err)
	}
	var total, largest int64
	for _, c := range capacities {
		total += c.free
		largest = max(largest, c.free)
	}
	return capacityResponse(total, largest), nil
}

func capacityResponse(available, maxVolume int64) *csi.GetCapacityResponse {
	return &csi.GetCapacityResponse{
		AvailableCapacity: available,
		MaximumVolumeSize: wrapperspb.Int64(maxVolume),
	}
}

type nodeFree struct {
	node string
	free int64
}

// capacities lists the free bytes of device class dc on every node that publishes it.
func (s *Server) capacities(ctx context.Context, dc string) ([]nodeFree, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "NodeList"})
	if err := s.cache.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var out []nodeFree
	for i := range list.Items {
		if free, ok := annotatedCapacity(&list.Items[i], dc); ok {
			out = append(out, nodeFree{node: list.Items[i].Name, free: free})
		}
	}
	return out, nil
}

// nodeCapacity is the free bytes of dc on node; 0 for unknown nodes.
func (s *Server) nodeCapacity(ctx context.Context, node, dc string) (int64, error) {
	m := nodeMetadata()
	if err := s.cache.Get(ctx, client.ObjectKey{Name: node}, m); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return 0, nil
		}
		return 0, fmt.Errorf("get node %s: %w", node, err)
	}
	free, _ := annotatedCapacity(m, dc)
	return free, nil
}

// annotatedCapacity reads the capacity annotation of dc (driver.FreeBytes); a malformed value
// counts as 0.
func annotatedCapacity(m *metav1.PartialObjectMetadata, dc string) (int64, bool) {
	free, present, err := driver.FreeBytes(m.Annotations, dc)
	if err != nil {
		return 0, present
	}
	return int64(min(free, math.MaxInt64)), present
}

// pickNode chooses the node of a new volume: the first node named by the preferred, then the
// requisite topology; without topology (immediate binding), the node with the most free space.
func (s *Server) pickNode(ctx context.Context, top *csi.TopologyRequirement, dc string) (string, error) {
	for _, t := range append(top.GetPreferred(), top.GetRequisite()...) {
		if n := t.GetSegments()[driver.TopologyNodeKey]; n != "" {
			return n, nil
		}
	}
	capacities, err := s.capacities(ctx, dc)
	if err != nil {
		return "", err
	}
	best := nodeFree{free: -1}
	for _, c := range capacities {
		if c.free > best.free {
			best = c
		}
	}
	if best.free <= 0 {
		return "", fmt.Errorf("%w: no node publishes free space for device class %q", errNoCapacity, dc)
	}
	return best.node, nil
}

// requisiteAllows reports whether a volume that can only be made on node (a snapshot restore or a
// clone: its source's node) satisfies top. The scheduler's choice (the first preferred segment) is
// a preference here; the requisite segments, when given, must include node. The PV then carries
// node's affinity and the scheduler moves the pod there.
func requisiteAllows(top *csi.TopologyRequirement, node string) bool {
	req := top.GetRequisite()
	if len(req) == 0 {
		return true
	}
	for _, t := range req {
		if t.GetSegments()[driver.TopologyNodeKey] == node {
			return true
		}
	}
	return false
}

// Parameters the external-provisioner adds with --extra-create-metadata, and the annotation the
// scheduler sets on a claim whose binding waits for its first consumer.
const (
	paramPVCName         = "csi.storage.k8s.io/pvc/name"
	paramPVCNamespace    = "csi.storage.k8s.io/pvc/namespace"
	annotationSelectedAt = "volume.kubernetes.io/selected-node"
)

// sourcePlacement is the node of a volume made from source (a snapshot or a volume): the source's
// node unless the requisite topology excludes it or the scheduler selected another node for the
// claim's first consumer (the claim's selected-node annotation, read when the provisioner passes the
// claim's name): then that node, and the data is copied there, when copies between nodes are enabled
// (Options.CrossNode; a clone's copy reads a snapshot of its source, see transfertoken's image.go).
// Otherwise every volume made from a source stays on the source's node.
func (s *Server) sourcePlacement(ctx context.Context, req *csi.CreateVolumeRequest,
	source *topolvmv1.LogicalVolume,
) (string, error) {
	top, node := req.GetAccessibilityRequirements(), source.Spec.NodeName
	allowed := requisiteAllows(top, node)
	crossNode, err := s.crossNode(ctx)
	if err != nil {
		return "", fmt.Errorf("read whether copies between nodes are enabled: %w", err)
	}
	if !crossNode {
		if !allowed {
			return "", fmt.Errorf("%w: the source %s is on node %s, which the requisite topology excludes; "+
				"snapshots and clones stay on their source's node (restores and clones move between nodes "+
				"with the LVMCluster's spec.transfer.crossNode: Enabled)", errInvalid, source.Spec.Name, node)
		}
		return node, nil
	}
	selected, err := s.selectedNode(ctx, req.GetParameters())
	if err != nil {
		return "", err
	}
	if allowed && (selected == "" || selected == node) {
		return node, nil
	}
	if selected != "" && requisiteAllows(top, selected) {
		return selected, nil
	}
	for _, t := range append(top.GetPreferred(), top.GetRequisite()...) {
		if n := t.GetSegments()[driver.TopologyNodeKey]; n != "" && n != node {
			return n, nil
		}
	}
	return "", fmt.Errorf("%w: the topology names no node for a copy of %s on node %s", errInvalid,
		source.Spec.Name, node)
}

// selectedNode is the node the scheduler selected for the claim being provisioned ("" when the
// parameters name no claim, or it has no selected node).
func (s *Server) selectedNode(ctx context.Context, params map[string]string) (string, error) {
	name, ns := params[paramPVCName], params[paramPVCNamespace]
	if name == "" || ns == "" {
		return "", nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := s.api.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("read claim %s/%s: %w", ns, name, err)
	}
	return pvc.Annotations[annotationSelectedAt], nil
}
