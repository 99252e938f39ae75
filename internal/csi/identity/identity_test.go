package identity

import (
	"context"
	"errors"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestGetPluginInfo(t *testing.T) {
	resp, err := New(nil).GetPluginInfo(t.Context(), &csi.GetPluginInfoRequest{})
	if err != nil || resp.GetName() != "topolvm.io" || resp.GetVendorVersion() == "" {
		t.Fatalf("got %v, %v", resp, err)
	}
}

func TestGetPluginCapabilities(t *testing.T) {
	resp, err := New(nil).GetPluginCapabilities(t.Context(), &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var controller, topology, online bool
	for _, c := range resp.GetCapabilities() {
		switch c.GetService().GetType() {
		case csi.PluginCapability_Service_CONTROLLER_SERVICE:
			controller = true
		case csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS:
			topology = true
		}
		online = online || c.GetVolumeExpansion().GetType() == csi.PluginCapability_VolumeExpansion_ONLINE
	}
	if !controller || !topology || !online {
		t.Errorf("capabilities %v", resp.GetCapabilities())
	}
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name      string
		ready     ReadyFunc
		wantReady bool
		wantCode  codes.Code
	}{
		{"no readiness func", nil, true, codes.OK},
		{"ready", func(context.Context) (bool, error) { return true, nil }, true, codes.OK},
		{"starting", func(context.Context) (bool, error) { return false, nil }, false, codes.OK},
		{
			"unhealthy",
			func(context.Context) (bool, error) { return false, errors.New("lvmd down") },
			false,
			codes.FailedPrecondition,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := New(tt.ready).Probe(t.Context(), &csi.ProbeRequest{})
			if status.Code(err) != tt.wantCode || resp.GetReady().GetValue() != tt.wantReady {
				t.Fatalf("got %v, %v; want ready=%v code %s", resp, err, tt.wantReady, tt.wantCode)
			}
		})
	}
}

// TestSnapshotMetadataCapabilities: the snapshot metadata endpoint advertises that service alone
// (the sidecar checks it) under the driver's name.
func TestSnapshotMetadataCapabilities(t *testing.T) {
	s := NewSnapshotMetadata()
	resp, err := s.GetPluginCapabilities(t.Context(), &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	caps := resp.GetCapabilities()
	if len(caps) != 1 || caps[0].GetService().GetType() != csi.PluginCapability_Service_SNAPSHOT_METADATA_SERVICE {
		t.Errorf("capabilities %v, want SNAPSHOT_METADATA_SERVICE alone", caps)
	}
	info, err := s.GetPluginInfo(t.Context(), &csi.GetPluginInfoRequest{})
	if err != nil || info.GetName() != "topolvm.io" {
		t.Errorf("plugin info %v, %v", info, err)
	}
}
