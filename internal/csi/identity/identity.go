// Package identity implements the CSI Identity service of driver topolvm.io, served by both the
// controller (operator) and the node agent.
package identity

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/version"
)

// ReadyFunc reports whether the plugin is ready to serve. It returns false while the plugin is still
// starting, and an error when it is unhealthy.
type ReadyFunc func(ctx context.Context) (bool, error)

// Server is the CSI Identity service.
type Server struct {
	csi.UnimplementedIdentityServer

	ready ReadyFunc
	// snapshotMetadata: the endpoint serves the SnapshotMetadata service only.
	snapshotMetadata bool
}

// New returns the Identity service of the controller and node endpoints; ready may be nil (always
// ready).
func New(ready ReadyFunc) *Server {
	return &Server{ready: ready}
}

// NewSnapshotMetadata returns the Identity service of the endpoint `lvms snapshot-metadata` serves to
// the external-snapshot-metadata sidecar: it advertises the SnapshotMetadata service only.
func NewSnapshotMetadata() *Server {
	return &Server{snapshotMetadata: true}
}

// GetPluginInfo returns the driver name and the lvms version.
func (s *Server) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: driver.Name, VendorVersion: version.Get().Version}, nil
}

// GetPluginCapabilities advertises the controller service, topology and online expansion, or on the
// snapshot metadata endpoint the SnapshotMetadata service.
func (s *Server) GetPluginCapabilities(
	context.Context,
	*csi.GetPluginCapabilitiesRequest,
) (*csi.GetPluginCapabilitiesResponse, error) {
	service := func(t csi.PluginCapability_Service_Type) *csi.PluginCapability {
		return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{
			Service: &csi.PluginCapability_Service{Type: t},
		}}
	}
	if s.snapshotMetadata {
		return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
			service(csi.PluginCapability_Service_SNAPSHOT_METADATA_SERVICE),
		}}, nil
	}
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
		service(csi.PluginCapability_Service_CONTROLLER_SERVICE),
		service(csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS),
		{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{
			Type: csi.PluginCapability_VolumeExpansion_ONLINE,
		}}},
	}}, nil
}

// Probe reports readiness; an unhealthy plugin answers FailedPrecondition.
func (s *Server) Probe(ctx context.Context, _ *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	if s.ready == nil {
		return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
	}
	ok, err := s.ready(ctx)
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "plugin is not healthy: %v", err)
	}
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(ok)}, nil
}
