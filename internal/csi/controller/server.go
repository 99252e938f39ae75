// Package controller implements the CSI Controller service of driver topolvm.io.
//
// A volume (or snapshot) is a topolvm.io/v1 LogicalVolume named by its CSI name. The controller creates
// it and returns once the node that owns it has reported the result in the status. Waiting is driven by
// informer events: every event for a LogicalVolume wakes the calls waiting on that name, which then
// re-read the cache. There is no polling and no timer; a call ends when the node answers or the caller's
// deadline passes.
package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
)

// +kubebuilder:rbac:groups=topolvm.io,resources=logicalvolumes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get

const (
	// FieldOwner is the field manager of every LogicalVolume write of the controller.
	FieldOwner = "lvms-csi-controller"
	// IndexVolumeID is the cache field index of LogicalVolumes by status.volumeID.
	IndexVolumeID = "status.volumeID"
)

// Options are the dependencies of the Controller service.
type Options struct {
	// Client writes LogicalVolumes. Reads go through Cache (and APIReader).
	Client client.Client
	// Cache serves every read (LogicalVolumes, Node metadata) and delivers the events waits wake up on.
	// New registers an index and an event handler on it; it may be started before or after New.
	Cache cache.Cache
	// APIReader reads from the API server, bypassing the cache: DeleteVolume asks it before it calls a
	// volume the cache does not know gone (the cache may lag or not be synced yet). Nil means Client.
	APIReader client.Reader
	// Clock is used for all timing the controller does (today: only measuring waits for the log). Nil
	// means the real clock. Tests pass a fake clock that never advances to prove no call waits on time.
	Clock clock.Clock
	// CrossNode reports, at each CreateVolume from a source, whether a restore or a clone may be
	// placed on another node than its source's, its data copied there by the node agents
	// (sourcePlacement); false, or nil, keeps it on the source's node.
	CrossNode func(context.Context) (bool, error)
	// Namespace is where the node agents' LVMVolumeGroupNodeStatus objects live (the operator's
	// namespace): the controller volume health reads the volume groups' state there. Empty leaves
	// the volume groups out of the health (the node's existence and readiness are still read).
	Namespace string
}

// Server is the CSI Controller service.
type Server struct {
	csi.UnimplementedControllerServer

	client client.Client
	cache  cache.Cache
	api    client.Reader
	clock  clock.Clock
	locks  lvmcsi.VolumeLocks
	events *notifier
	// crossNode: Options.CrossNode.
	crossNode func(context.Context) (bool, error)
	// namespace: Options.Namespace.
	namespace string
}

// New registers the LogicalVolume index and event handler on o.Cache and returns the service.
func New(ctx context.Context, o Options) (*Server, error) {
	if o.Client == nil || o.Cache == nil {
		return nil, errors.New("csi controller: Client and Cache are required")
	}
	s := &Server{client: o.Client, cache: o.Cache, api: o.APIReader, clock: o.Clock, events: newNotifier(),
		crossNode: o.CrossNode, namespace: o.Namespace}
	if s.api == nil {
		s.api = o.Client
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	if s.crossNode == nil {
		s.crossNode = func(context.Context) (bool, error) { return false, nil }
	}
	lv := &topolvmv1.LogicalVolume{}
	if err := o.Cache.IndexField(ctx, lv, IndexVolumeID, indexVolumeID); err != nil {
		return nil, fmt.Errorf("index LogicalVolumes by %s: %w", IndexVolumeID, err)
	}
	inf, err := o.Cache.GetInformer(ctx, lv, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("get LogicalVolume informer: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    s.events.notifyObject,
		UpdateFunc: func(_, obj any) { s.events.notifyObject(obj) },
		DeleteFunc: s.events.notifyObject,
	}); err != nil {
		return nil, fmt.Errorf("add LogicalVolume event handler: %w", err)
	}
	if _, err := o.Cache.GetInformer(ctx, nodeMetadata(), cache.BlockUntilSynced(false)); err != nil {
		return nil, fmt.Errorf("get Node metadata informer: %w", err)
	}
	// The volume health reads Nodes' Ready condition (the operator caches Nodes anyway) and, in
	// Namespace, the node agents' LVMVolumeGroupNodeStatus objects.
	if _, err := o.Cache.GetInformer(ctx, &corev1.Node{}, cache.BlockUntilSynced(false)); err != nil {
		return nil, fmt.Errorf("get Node informer: %w", err)
	}
	if o.Namespace != "" {
		if _, err := o.Cache.GetInformer(ctx, &lvmv1alpha1.LVMVolumeGroupNodeStatus{},
			cache.BlockUntilSynced(false)); err != nil {
			return nil, fmt.Errorf("get LVMVolumeGroupNodeStatus informer: %w", err)
		}
	}
	return s, nil
}

func indexVolumeID(obj client.Object) []string {
	lv, ok := obj.(*topolvmv1.LogicalVolume)
	if !ok || lv.Status.VolumeID == "" {
		return nil
	}
	return []string{lv.Status.VolumeID}
}

// nodeMetadata is an empty Node metadata object: the controller caches only metadata of Nodes.
func nodeMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	return m
}

// ControllerGetCapabilities advertises create/delete, expand, snapshots, clones, capacity, listing
// and getting volumes and snapshots, volume health, and modification (VolumeAttributesClass IO caps).
func (s *Server) ControllerGetCapabilities(
	context.Context,
	*csi.ControllerGetCapabilitiesRequest,
) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, t := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
		csi.ControllerServiceCapability_RPC_GET_CAPACITY,
		csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
		csi.ControllerServiceCapability_RPC_GET_VOLUME,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_GET_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH,
		csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH,
		csi.ControllerServiceCapability_RPC_MODIFY_VOLUME,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
			Rpc: &csi.ControllerServiceCapability_RPC{Type: t},
		}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}
