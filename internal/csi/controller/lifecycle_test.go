package controller

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

func TestControllerExpandVolume(t *testing.T) {
	tests := []struct {
		name         string
		capability   *csi.VolumeCapability
		encryption   string
		wantNodeStep bool
	}{
		{"filesystem", mountCap("ext4"), "", true},
		{"block", blockCap(), "", false},
		// Its dm-crypt mapping must be resized on the node.
		{"encrypted block", blockCap(), lvmcsi.EncryptionLUKS2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := uniqueName("grow")
			v := mustCreate(
				t,
				createReq(name, withCaps(tt.capability), withParam(driver.ParamEncryption, tt.encryption)),
			)
			req := &csi.ControllerExpandVolumeRequest{
				VolumeId:         v.GetVolumeId(),
				CapacityRange:    &csi.CapacityRange{RequiredBytes: 2*lvmcsi.GiB + 1},
				VolumeCapability: tt.capability,
			}
			resp, err := srv.ControllerExpandVolume(testCtx(t), req)
			if err != nil {
				t.Fatalf("ControllerExpandVolume: %v", err)
			}
			if resp.GetCapacityBytes() < 2*lvmcsi.GiB+1 || resp.GetNodeExpansionRequired() != tt.wantNodeStep {
				t.Errorf(
					"response %+v, want capacity ≥ %d and node expansion %v",
					resp,
					2*lvmcsi.GiB+1,
					tt.wantNodeStep,
				)
			}
			if got := getLV(t, name).Spec.Size.Value(); got != lvmcsi.RoundUp(2*lvmcsi.GiB+1) {
				t.Errorf("spec.size %d", got)
			}
			// Repeating (or asking for less) changes nothing and succeeds.
			req.CapacityRange.RequiredBytes = lvmcsi.GiB
			if _, err := srv.ControllerExpandVolume(testCtx(t), req); err != nil {
				t.Errorf("repeated ControllerExpandVolume: %v", err)
			}
		})
	}
	_, err := srv.ControllerExpandVolume(testCtx(t), &csi.ControllerExpandVolumeRequest{
		VolumeId: "no-such-volume", CapacityRange: &csi.CapacityRange{RequiredBytes: lvmcsi.GiB},
	})
	wantCode(t, err, codes.NotFound)
}

func TestDeleteVolumeWaitsUntilGone(t *testing.T) {
	name := uniqueName("del")
	v := mustCreate(t, createReq(name))
	if lv := getLV(t, name); len(lv.Finalizers) == 0 {
		t.Fatalf("fake node did not add its finalizer")
	}
	for _, id := range []string{v.GetVolumeId(), v.GetVolumeId(), "never-existed"} {
		if _, err := srv.DeleteVolume(testCtx(t), &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
			t.Fatalf("DeleteVolume %s: %v", id, err)
		}
		if lv := getLV(t, name); lv != nil {
			t.Fatalf("DeleteVolume %s returned while the LogicalVolume still exists", id)
		}
	}
	_, err := srv.DeleteVolume(testCtx(t), &csi.DeleteVolumeRequest{})
	wantCode(t, err, codes.InvalidArgument)

	snapSrc := mustCreate(t, createReq(uniqueName("del")))
	snapName := uniqueName("delsnap")
	snap, err := srv.CreateSnapshot(
		testCtx(t),
		&csi.CreateSnapshotRequest{Name: snapName, SourceVolumeId: snapSrc.GetVolumeId()},
	)
	if err != nil {
		t.Fatalf("CreateSnapshot: %v", err)
	}
	if _, err := srv.DeleteSnapshot(
		testCtx(t),
		&csi.DeleteSnapshotRequest{SnapshotId: snap.GetSnapshot().GetSnapshotId()},
	); err != nil {
		t.Fatalf("DeleteSnapshot: %v", err)
	}
	if getLV(t, snapName) != nil {
		t.Errorf("snapshot LogicalVolume still exists")
	}
}

func TestGetCapacityFromNodeAnnotations(t *testing.T) {
	top := func(node string) *csi.Topology {
		return &csi.Topology{Segments: map[string]string{driver.TopologyNodeKey: node}}
	}
	tests := []struct {
		name        string
		deviceClass string
		topology    *csi.Topology
		want        int64
		wantMax     int64
	}{
		{"default class on one node", "", top(nodeA), 10 * lvmcsi.GiB, 10 * lvmcsi.GiB},
		{"named class on one node", "ssd", top(nodeA), 5 * lvmcsi.GiB, 5 * lvmcsi.GiB},
		{"default class summed over nodes", "", nil, 30 * lvmcsi.GiB, 20 * lvmcsi.GiB},
		{"malformed annotation counts as zero", "ssd", nil, 5 * lvmcsi.GiB, 5 * lvmcsi.GiB},
		{"unknown node", "", top("no-such-node"), 0, 0},
		{"node without the class", "ssd", top(nodeManual), 0, 0},
		{"foreign topology key", "", &csi.Topology{Segments: map[string]string{"zone": "a"}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := srv.GetCapacity(testCtx(t), &csi.GetCapacityRequest{
				Parameters:         map[string]string{driver.ParamDeviceClass: tt.deviceClass},
				AccessibleTopology: tt.topology,
			})
			if err != nil {
				t.Fatalf("GetCapacity: %v", err)
			}
			if resp.GetAvailableCapacity() != tt.want || resp.GetMaximumVolumeSize().GetValue() != tt.wantMax {
				t.Errorf("available %d max %d, want %d and %d", resp.GetAvailableCapacity(),
					resp.GetMaximumVolumeSize().GetValue(), tt.want, tt.wantMax)
			}
		})
	}
}

func TestValidateVolumeCapabilities(t *testing.T) {
	v := mustCreate(t, createReq(uniqueName("val")))
	multi := mountCap("ext4")
	multi.AccessMode.Mode = csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	tests := []struct {
		name      string
		id        string
		caps      []*csi.VolumeCapability
		want      codes.Code
		confirmed bool
	}{
		{"supported", v.GetVolumeId(), []*csi.VolumeCapability{mountCap("xfs"), blockCap()}, codes.OK, true},
		{"unsupported mode", v.GetVolumeId(), []*csi.VolumeCapability{multi}, codes.OK, false},
		{"unknown volume", "no-such-volume", []*csi.VolumeCapability{mountCap("ext4")}, codes.NotFound, false},
		{"no capabilities", v.GetVolumeId(), nil, codes.InvalidArgument, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := srv.ValidateVolumeCapabilities(testCtx(t), &csi.ValidateVolumeCapabilitiesRequest{
				VolumeId: tt.id, VolumeCapabilities: tt.caps,
			})
			wantCode(t, err, tt.want)
			if (resp.GetConfirmed() != nil) != tt.confirmed {
				t.Errorf("confirmed %v, want %v (message %q)", resp.GetConfirmed(), tt.confirmed, resp.GetMessage())
			}
		})
	}
}

func TestControllerGetCapabilities(t *testing.T) {
	resp, err := srv.ControllerGetCapabilities(t.Context(), &csi.ControllerGetCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[csi.ControllerServiceCapability_RPC_Type]bool{}
	for _, c := range resp.GetCapabilities() {
		got[c.GetRpc().GetType()] = true
	}
	for _, want := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
		csi.ControllerServiceCapability_RPC_GET_CAPACITY,
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
		csi.ControllerServiceCapability_RPC_GET_VOLUME,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_GET_SNAPSHOT,
	} {
		if !got[want] {
			t.Errorf("capability %s missing", want)
		}
	}
}
