package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

var seq atomic.Int64

func uniqueName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }

// testCtx is a context bounded like a CO's call, so a broken wait fails instead of hanging.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type reqOpt func(*csi.CreateVolumeRequest)

func mountCap(fs string) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fs}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

func blockCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
	}
}

// createReq is a 1 GiB ext4 volume on node-a, changed by opts.
func createReq(name string, opts ...reqOpt) *csi.CreateVolumeRequest {
	r := &csi.CreateVolumeRequest{
		Name:               name,
		CapacityRange:      &csi.CapacityRange{RequiredBytes: lvmcsi.GiB},
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")},
		Parameters:         map[string]string{},
	}
	onNode(nodeA)(r)
	for _, o := range opts {
		o(r)
	}
	return r
}

func onNode(n string) reqOpt {
	return func(r *csi.CreateVolumeRequest) {
		r.AccessibilityRequirements = &csi.TopologyRequirement{
			Preferred: []*csi.Topology{{Segments: map[string]string{driver.TopologyNodeKey: n}}},
			Requisite: []*csi.Topology{{Segments: map[string]string{driver.TopologyNodeKey: n}}},
		}
	}
}

// preferring is the topology csi-provisioner sends for WaitForFirstConsumer: every node requisite,
// the scheduler's node first among the preferred.
func preferring(nodes ...string) reqOpt {
	return func(r *csi.CreateVolumeRequest) {
		var top []*csi.Topology
		for _, n := range nodes {
			top = append(top, &csi.Topology{Segments: map[string]string{driver.TopologyNodeKey: n}})
		}
		r.AccessibilityRequirements = &csi.TopologyRequirement{Preferred: top, Requisite: top}
	}
}

func noTopology() reqOpt {
	return func(r *csi.CreateVolumeRequest) { r.AccessibilityRequirements = nil }
}

func withRange(required, limit int64) reqOpt {
	return func(r *csi.CreateVolumeRequest) {
		r.CapacityRange = &csi.CapacityRange{RequiredBytes: required, LimitBytes: limit}
	}
}

func withCaps(caps ...*csi.VolumeCapability) reqOpt {
	return func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities = caps }
}

func withParam(k, v string) reqOpt { return func(r *csi.CreateVolumeRequest) { r.Parameters[k] = v } }

func fromSnapshot(id string) reqOpt {
	return func(r *csi.CreateVolumeRequest) {
		r.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id}}}
	}
}

func fromVolume(id string) reqOpt {
	return func(r *csi.CreateVolumeRequest) {
		r.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: id}}}
	}
}

// mustCreate creates a volume and fails the test on error.
func mustCreate(t *testing.T, r *csi.CreateVolumeRequest) *csi.Volume {
	t.Helper()
	resp, err := srv.CreateVolume(testCtx(t), r)
	if err != nil {
		t.Fatalf("CreateVolume %s: %v", r.GetName(), err)
	}
	return resp.GetVolume()
}

// getLV reads a LogicalVolume from the apiserver; nil when it does not exist.
func getLV(t *testing.T, name string) *topolvmv1.LogicalVolume {
	t.Helper()
	lv := &topolvmv1.LogicalVolume{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: name}, lv); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		t.Fatalf("get LogicalVolume %s: %v", name, err)
	}
	return lv
}

func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v (code %s), want code %s", err, status.Code(err), code)
	}
	t.Logf("got expected %s: %v", code, err)
}
