package controller

import (
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/util/validation"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

func TestCreateVolumeIsIdempotent(t *testing.T) {
	name := uniqueName("pvc")
	first := mustCreate(t, createReq(name))
	second := mustCreate(t, createReq(name))
	if first.GetVolumeId() == "" || first.GetVolumeId() != second.GetVolumeId() {
		t.Fatalf("volume IDs %q and %q, want the same non-empty ID", first.GetVolumeId(), second.GetVolumeId())
	}
	if got := first.GetAccessibleTopology()[0].GetSegments()[driver.TopologyNodeKey]; got != nodeA {
		t.Errorf("topology node %q, want %q", got, nodeA)
	}
	if first.GetCapacityBytes() != lvmcsi.GiB {
		t.Errorf("capacity %d, want %d", first.GetCapacityBytes(), lvmcsi.GiB)
	}
	lv := getLV(t, name)
	if lv.Spec.Name != name || lv.Spec.NodeName != nodeA || lv.Spec.Source != "" {
		t.Errorf("LogicalVolume spec %+v", lv.Spec)
	}
}

func TestCreateVolumeSizeMismatchIsAlreadyExists(t *testing.T) {
	name := uniqueName("pvc")
	mustCreate(t, createReq(name, withRange(lvmcsi.GiB, 0)))
	_, err := srv.CreateVolume(testCtx(t), createReq(name, withRange(2*lvmcsi.GiB, 0)))
	wantCode(t, err, codes.AlreadyExists)
	// A smaller request that the existing volume satisfies is the same volume.
	mustCreate(t, createReq(name, withRange(lvmcsi.GiB/2, 0)))
}

func TestCreateVolumeSizes(t *testing.T) {
	tests := []struct {
		name string
		opts []reqOpt
		want int64 // spec.size
	}{
		{"zero request is 1Gi", []reqOpt{withRange(0, 0)}, lvmcsi.GiB},
		{"rounded up to 4096", []reqOpt{withRange(100*lvmcsi.MiB+1, 0)}, 100*lvmcsi.MiB + 4096},
		{"ext4 minimum", []reqOpt{withRange(1, 0)}, 32 * lvmcsi.MiB},
		{"xfs minimum", []reqOpt{withRange(1, 0), withCaps(mountCap("xfs"))}, 300 * lvmcsi.MiB},
		{"btrfs minimum", []reqOpt{withRange(1, 0), withCaps(mountCap("btrfs"))}, 200 * lvmcsi.MiB},
		{"block minimum", []reqOpt{withRange(1, 0), withCaps(blockCap())}, 8 * lvmcsi.MiB},
		{"fstype from parameters", []reqOpt{withRange(1, 0), withCaps(mountCap("")),
			withParam(driver.ParamFSType, "xfs")}, 300 * lvmcsi.MiB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := uniqueName("size")
			mustCreate(t, createReq(name, tt.opts...))
			if got := getLV(t, name).Spec.Size.Value(); got != tt.want {
				t.Errorf("spec.size %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCreateVolumeRejectsInvalidRequests(t *testing.T) {
	multi := mountCap("ext4")
	multi.AccessMode.Mode = csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	reader := mountCap("ext4")
	reader.AccessMode.Mode = csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
	tests := []struct {
		name string
		req  *csi.CreateVolumeRequest
		want codes.Code
	}{
		{"no name", createReq(""), codes.InvalidArgument},
		{"no capabilities", createReq(uniqueName("bad"), withCaps()), codes.InvalidArgument},
		{"multi-node access", createReq(uniqueName("bad"), withCaps(multi)), codes.InvalidArgument},
		{"read-only access", createReq(uniqueName("bad"), withCaps(reader)), codes.InvalidArgument},
		{"unsupported filesystem", createReq(uniqueName("bad"), withCaps(mountCap("ntfs"))), codes.InvalidArgument},
		{"limit below xfs minimum", createReq(uniqueName("bad"), withCaps(mountCap("xfs")),
			withRange(0, 100*lvmcsi.MiB)), codes.OutOfRange},
		{"required above limit", createReq(uniqueName("bad"), withRange(2*lvmcsi.GiB, lvmcsi.GiB)), codes.OutOfRange},
		{"unknown snapshot", createReq(uniqueName("bad"), fromSnapshot("no-such-snapshot")), codes.NotFound},
		{"unknown encryption", createReq(uniqueName("bad"), withParam(driver.ParamEncryption, "luks1")),
			codes.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := srv.CreateVolume(testCtx(t), tt.req)
			wantCode(t, err, tt.want)
			if name := tt.req.GetName(); name != "" && getLV(t, name) != nil {
				t.Errorf("a LogicalVolume %s was created for an invalid request", name)
			}
		})
	}
}

func TestCreateVolumeWithoutTopologyPicksTheNodeWithMostSpace(t *testing.T) {
	v := mustCreate(t, createReq(uniqueName("pvc"), noTopology()))
	if got := v.GetAccessibleTopology()[0].GetSegments()[driver.TopologyNodeKey]; got != nodeB {
		t.Errorf("node %q, want %q (20Gi free)", got, nodeB)
	}
	_, err := srv.CreateVolume(testCtx(t), createReq(uniqueName("pvc"), noTopology(),
		withParam(driver.ParamDeviceClass, "nowhere")))
	wantCode(t, err, codes.ResourceExhausted)
}

func TestCreateVolumeNodeFailureIsMappedAndCleanedUp(t *testing.T) {
	name := uniqueName("pvc")
	_, err := srv.CreateVolume(testCtx(t), createReq(name, onNode(nodeFull)))
	wantCode(t, err, codes.ResourceExhausted)
	if lv := getLV(t, name); lv != nil && lv.DeletionTimestamp == nil {
		t.Errorf("the failed LogicalVolume was kept, so a retry could never succeed")
	}
}

func TestSnapshotAndCloneStayOnTheSourceNode(t *testing.T) {
	src := mustCreate(t, createReq(uniqueName("src"), withParam(driver.ParamDeviceClass, "ssd")))
	snapName := uniqueName("snap")
	snap, err := srv.CreateSnapshot(
		testCtx(t),
		&csi.CreateSnapshotRequest{Name: snapName, SourceVolumeId: src.GetVolumeId()},
	)
	if err != nil {
		t.Fatalf("CreateSnapshot: %v", err)
	}
	again, err := srv.CreateSnapshot(
		testCtx(t),
		&csi.CreateSnapshotRequest{Name: snapName, SourceVolumeId: src.GetVolumeId()},
	)
	if err != nil || again.GetSnapshot().GetSnapshotId() != snap.GetSnapshot().GetSnapshotId() {
		t.Fatalf("repeated CreateSnapshot: %v, %v", again, err)
	}
	lv := getLV(t, snapName)
	if lv.Spec.AccessType != topolvmv1.AccessTypeReadOnly || lv.Spec.Source != src.GetVolumeId() ||
		lv.Spec.NodeName != nodeA || lv.Spec.DeviceClass != "ssd" {
		t.Errorf("snapshot spec %+v", lv.Spec)
	}
	if !snap.GetSnapshot().GetReadyToUse() || snap.GetSnapshot().GetSourceVolumeId() != src.GetVolumeId() {
		t.Errorf("snapshot %+v", snap.GetSnapshot())
	}

	tests := []struct {
		name string
		opts []reqOpt
		want codes.Code
	}{
		{"restore", []reqOpt{fromSnapshot(snap.GetSnapshot().GetSnapshotId())}, codes.OK},
		{"clone", []reqOpt{fromVolume(src.GetVolumeId())}, codes.OK},
		{"clone without topology", []reqOpt{fromVolume(src.GetVolumeId()), noTopology()}, codes.OK},
		{
			"restore on another node",
			[]reqOpt{fromSnapshot(snap.GetSnapshot().GetSnapshotId()), onNode(nodeB)},
			codes.InvalidArgument,
		},
		// WaitForFirstConsumer: the scheduler picked node B for the pod; any node is allowed.
		{
			"clone while another node is preferred",
			[]reqOpt{fromVolume(src.GetVolumeId()), preferring(nodeB, nodeA)},
			codes.OK,
		},
		{
			"restore while another node is preferred",
			[]reqOpt{fromSnapshot(snap.GetSnapshot().GetSnapshotId()), preferring(nodeB, nodeA)},
			codes.OK,
		},
		{"clone into another device class", []reqOpt{fromVolume(src.GetVolumeId()),
			withParam(driver.ParamDeviceClass, "hdd")}, codes.InvalidArgument},
		{"unknown source volume", []reqOpt{fromVolume("no-such-volume")}, codes.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := uniqueName("restore")
			v, err := srv.CreateVolume(testCtx(t), createReq(name, tt.opts...))
			wantCode(t, err, tt.want)
			if tt.want != codes.OK {
				return
			}
			lv := getLV(t, name)
			if lv.Spec.AccessType != topolvmv1.AccessTypeReadWrite || lv.Spec.NodeName != nodeA ||
				lv.Spec.DeviceClass != "ssd" || lv.Spec.Source == "" {
				t.Errorf("clone spec %+v", lv.Spec)
			}
			if v.GetVolume().GetContentSource() == nil {
				t.Errorf("response lacks the content source")
			}
			if top := v.GetVolume().GetAccessibleTopology(); len(top) != 1 ||
				top[0].GetSegments()[driver.TopologyNodeKey] != nodeA {
				t.Errorf("accessible topology %v, want the source's node %s", top, nodeA)
			}
		})
	}
	_, err = srv.CreateSnapshot(testCtx(t), &csi.CreateSnapshotRequest{Name: snapName, SourceVolumeId: "other"})
	wantCode(t, err, codes.NotFound)
}

func TestObjectName(t *testing.T) {
	long := strings.Repeat("a", 300)
	tests := []struct {
		csiName  string
		wantSame bool
	}{
		{"pvc-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", true},
		{"snapshot-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", true},
		{"Sanity-Volume-ABC", false},
		{"has_underscore", false},
		{long, false},
	}
	for _, tt := range tests {
		t.Run(tt.csiName[:min(len(tt.csiName), 20)], func(t *testing.T) {
			got := objectName(tt.csiName)
			if (got == tt.csiName) != tt.wantSame {
				t.Errorf("objectName(%q) = %q", tt.csiName, got)
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("objectName(%q) = %q is not a valid object name: %v", tt.csiName, got, errs)
			}
			if objectName(tt.csiName) != got {
				t.Errorf("objectName is not deterministic")
			}
		})
	}
	mustCreate(t, createReq("Upper-Case_Name"))
	v1 := mustCreate(t, createReq("Upper-Case_Name"))
	if lv := getLV(t, objectName("Upper-Case_Name")); lv == nil || lv.Spec.Name != "Upper-Case_Name" ||
		lv.Status.VolumeID != v1.GetVolumeId() {
		t.Errorf("LogicalVolume of a CSI name that is no object name: %+v", lv)
	}
}

// TestCreateVolumeEncrypted: the encryption parameter reaches the node in the volume context (of the
// first and of a repeated call), the LUKS2 header is added to the minimum size, and a repeat asking
// for another encryption is AlreadyExists.
func TestCreateVolumeEncrypted(t *testing.T) {
	name := uniqueName("luks")
	small := withRange(lvmcsi.MiB, 0)
	for range 2 {
		v := mustCreate(t, createReq(name, small, withParam(driver.ParamEncryption, lvmcsi.EncryptionLUKS2)))
		if got := v.GetVolumeContext()[driver.ParamEncryption]; got != lvmcsi.EncryptionLUKS2 {
			t.Errorf(
				"volume context %v, want %s=%s",
				v.GetVolumeContext(),
				driver.ParamEncryption,
				lvmcsi.EncryptionLUKS2,
			)
		}
	}
	if got, want := getLV(t, name).Spec.Size.Value(), lvmcsi.MinSizeExt4+lvmcsi.LUKS2HeaderSize; got != want {
		t.Errorf("spec.size %d, want the ext4 minimum plus the LUKS2 header, %d", got, want)
	}
	_, err := srv.CreateVolume(testCtx(t), createReq(name, small))
	wantCode(t, err, codes.AlreadyExists)
	if v := mustCreate(t, createReq(uniqueName("plain"))); len(v.GetVolumeContext()) != 0 {
		t.Errorf("plain volume has volume context %v", v.GetVolumeContext())
	}
}
