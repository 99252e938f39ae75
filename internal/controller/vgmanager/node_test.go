package vgmanager_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// thinSpec is the sample device class: thin pool at 90%, overprovisioned 10 times.
func thinSpec(policy lvmv1alpha1.DeviceDiscoveryPolicy) lvmv1alpha1.LVMVolumeGroupSpec {
	return lvmv1alpha1.LVMVolumeGroupSpec{DeviceDiscoveryPolicy: policy, ThinPoolConfig: &lvmv1alpha1.ThinPoolConfig{
		Name:                       "tp",
		SizePercent:                90,
		OverprovisionRatio:         10,
		ChunkSizeCalculationPolicy: lvmv1alpha1.ChunkSizeCalculationPolicyStatic,
	}}
}

func withPaths(spec lvmv1alpha1.LVMVolumeGroupSpec, force *bool, paths ...string) lvmv1alpha1.LVMVolumeGroupSpec {
	sel := &lvmv1alpha1.DeviceSelector{ForceWipeDevicesAndDestroyAllData: force}
	for _, p := range paths {
		sel.Paths = append(sel.Paths, lvmv1alpha1.DevicePath(p))
	}
	spec.DeviceSelector = sel
	return spec
}

func (n *node) manager() *vgmanager.NodeManager {
	return vgmanager.NewNodeManager(n.disks, n.lvm, n.resolve)
}

func (n *node) reconcile(t *testing.T, in vgmanager.Input) vgmanager.Outcome {
	t.Helper()
	if in.NodeName == "" {
		in.NodeName = "node-a"
	}
	out, err := n.manager().Reconcile(ctrl.LoggerInto(t.Context(), testr.New(t)), in, vgmanager.Hooks{})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return out
}

// poolShare returns the pool's footprint (its data and metadata sub-LVs and the VG's pool metadata
// spare, as lvm2 allocated them) and the VG's size, in extents.
func (n *node) poolShare(t *testing.T, vg, pool string) (uint64, uint64) {
	t.Helper()
	s := n.fake.State() // with the hidden sub-LVs
	v, ok := s.VG(vg)
	if _, ok2 := s.LV(vg, pool); !ok || !ok2 {
		t.Fatalf("VG %s or pool %s missing", vg, pool)
	}
	var used uint64
	for _, sub := range []string{pool + "_tdata", pool + "_tmeta", "lvol0_pmspare"} {
		lv, ok := s.LV(vg, sub)
		if !ok {
			t.Fatalf("pool %s/%s: no %s", vg, pool, sub)
		}
		used += lv.Size / v.ExtentSize
	}
	return used, v.ExtentCount
}

func excluded(st lvmv1alpha1.VGStatus, dev string) string {
	for _, e := range st.Excluded {
		if e.Name == dev {
			return strings.Join(e.Reasons, "; ")
		}
	}
	return ""
}

func TestSampleClassOnTwoBlankDisksAndOneWithAFilesystem(t *testing.T) {
	n := newNode([]string{"/dev/sdb", "/dev/sdc", "/dev/sdd"}, map[string][]string{"/dev/sdd": {"ext4"}})
	out := n.reconcile(t, vgmanager.Input{Name: "vg1", Spec: thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic)})

	if out.Status.Status != lvmv1alpha1.VGStatusReady || out.Status.Reason != "" {
		t.Fatalf("status %s %q, want Ready", out.Status.Status, out.Status.Reason)
	}
	if !slices.Equal(out.Status.Devices, []string{"/dev/sdb", "/dev/sdc"}) {
		t.Errorf("devices %v", out.Status.Devices)
	}
	if r := excluded(out.Status, "/dev/sdd"); r != "has a filesystem signature: ext4" {
		t.Errorf("/dev/sdd excluded with %q", r)
	}
	want := []string{
		"lvm vgcreate --addtag lvms vg1 /dev/sdb /dev/sdc",
		"lvm lvcreate -y --type thin-pool -n tp -l 90%FREE -c 131072b -Z y vg1",
	}
	if got := n.modifications(); !slices.Equal(got, want) {
		t.Errorf("changes:\n got %q\nwant %q", got, want)
	}
	if pool, vg := n.poolShare(t, "vg1", "tp"); pool != 90*vg/100 {
		t.Errorf("pool %d extents of %d, want 90%%", pool, vg)
	}
	if !out.CanGrow {
		t.Error("a Dynamic VG should be looked at again for new disks")
	}
	// A second pass changes nothing.
	n.fake.Reset()
	if out := n.reconcile(
		t,
		vgmanager.Input{Name: "vg1", Spec: thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic)},
	); out.Status.Status != lvmv1alpha1.VGStatusReady {
		t.Fatalf("second pass: %+v", out.Status)
	}
	if got := n.modifications(); len(got) != 0 {
		t.Errorf("second pass changed %q", got)
	}
}

func TestDiscoveryPolicy(t *testing.T) {
	optional := func(spec lvmv1alpha1.LVMVolumeGroupSpec) lvmv1alpha1.LVMVolumeGroupSpec {
		spec.DeviceSelector = &lvmv1alpha1.DeviceSelector{
			OptionalPaths: []lvmv1alpha1.DevicePath{"/dev/sdb", "/dev/sdc"},
		}
		return spec
	}
	raid := optional(lvmv1alpha1.LVMVolumeGroupSpec{DeviceDiscoveryPolicy: lvmv1alpha1.DeviceDiscoveryPolicyDynamic,
		RAIDConfig: &lvmv1alpha1.RAIDConfig{Type: lvmv1alpha1.RAIDType1, Mirrors: ptr.To[int32](1)}})
	// 2 GiB disks of 4 MiB extents: 511 → 1022 extents (lvm2 keeps a PV's first MiB); the pool
	// follows to 90% of the VG: 919 extents, of which 1 metadata and 1 spare, so 917 of data.
	grown := []string{"lvm vgextend vg1 /dev/sdc", "lvm lvextend -y -l 917 vg1/tp"}
	const static = "not added: deviceDiscoveryPolicy is Static and the volume group already exists"
	tests := []struct {
		name        string
		spec        lvmv1alpha1.LVMVolumeGroupSpec
		wantDevices []string
		wantChanges []string
		wantExclude string
		wantGrow    bool
	}{
		{name: "Dynamic", spec: thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic),
			wantDevices: []string{"/dev/sdb", "/dev/sdc"}, wantChanges: grown, wantGrow: true},
		{name: "unset is Static", spec: thinSpec(""), wantDevices: []string{"/dev/sdb"}, wantExclude: static},
		{name: "Static", spec: thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyStatic),
			wantDevices: []string{"/dev/sdb"}, wantExclude: static},
		{
			name:        "Static with listed disks: the list decides",
			spec:        optional(thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyStatic)),
			wantDevices: []string{"/dev/sdb", "/dev/sdc"},
			wantChanges: grown,
			wantGrow:    true,
		},
		{name: "RAID keeps its disks", spec: raid, wantDevices: []string{"/dev/sdb"},
			wantExclude: "not added: a RAID device class keeps the disks it was created with"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode([]string{"/dev/sdb"}, nil)
			n.reconcile(t, vgmanager.Input{Name: "vg1", Spec: tt.spec})
			n.fake.Reset()
			n.disk("/dev/sdc", 2*gib) // a disk appears

			out := n.reconcile(t, vgmanager.Input{Name: "vg1", Spec: tt.spec})
			if out.Status.Status != lvmv1alpha1.VGStatusReady || !slices.Equal(out.Status.Devices, tt.wantDevices) {
				t.Fatalf("status %+v", out.Status)
			}
			if got := n.modifications(); !slices.Equal(got, tt.wantChanges) {
				t.Errorf("changes:\n got %q\nwant %q", got, tt.wantChanges)
			}
			if got := excluded(out.Status, "/dev/sdc"); got != tt.wantExclude {
				t.Errorf("/dev/sdc excluded with %q, want %q", got, tt.wantExclude)
			}
			if out.CanGrow != tt.wantGrow {
				t.Errorf("CanGrow %t, want %t", out.CanGrow, tt.wantGrow)
			}
			if !tt.wantGrow {
				return
			}
			if pool, vg := n.poolShare(t, "vg1", "tp"); pool != 90*vg/100 {
				t.Errorf("pool %d extents of %d, want 90%%", pool, vg)
			}
		})
	}
}

func TestTripleWipeOptIn(t *testing.T) {
	tests := []struct {
		name         string
		paths        []string
		force        *bool
		alreadyWiped bool
		wantWiped    []string
		wantStep     bool
		wantStatus   lvmv1alpha1.VGStatusType
	}{
		{name: "all three", paths: []string{"/dev/sdb", "/dev/sdc"}, force: ptr.To(true),
			wantWiped: []string{"/dev/sdc"}, wantStep: true, wantStatus: lvmv1alpha1.VGStatusReady},
		{name: "no paths", force: ptr.To(true), wantStatus: lvmv1alpha1.VGStatusReady},
		{name: "force unset", paths: []string{"/dev/sdb", "/dev/sdc"}, wantStatus: lvmv1alpha1.VGStatusFailed},
		{
			name:       "force false",
			paths:      []string{"/dev/sdb", "/dev/sdc"},
			force:      ptr.To(false),
			wantStatus: lvmv1alpha1.VGStatusFailed,
		},
		{
			name:         "already wiped on this node",
			paths:        []string{"/dev/sdb", "/dev/sdc"},
			force:        ptr.To(true),
			alreadyWiped: true,
			wantStatus:   lvmv1alpha1.VGStatusFailed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode([]string{"/dev/sdb", "/dev/sdc"}, map[string][]string{"/dev/sdc": {"xfs"}})
			spec := withPaths(thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic), tt.force, tt.paths...)
			if len(tt.paths) == 0 {
				spec.DeviceSelector.Paths = nil
			}
			out := n.reconcile(t, vgmanager.Input{Name: "vg1", Spec: spec, AlreadyWiped: tt.alreadyWiped})
			if got := n.disks.Wiped(); !slices.Equal(got, tt.wantWiped) {
				t.Errorf("wiped %q, want %q", got, tt.wantWiped)
			}
			if out.Wiped != tt.wantStep {
				t.Errorf("Outcome.Wiped %t, want %t", out.Wiped, tt.wantStep)
			}
			if out.Status.Status != tt.wantStatus {
				t.Errorf("status %s %q, want %s", out.Status.Status, out.Status.Reason, tt.wantStatus)
			}
			if tt.wantStatus == lvmv1alpha1.VGStatusFailed {
				if !strings.Contains(out.Status.Reason, "/dev/sdc") || len(n.modifications()) != 0 {
					t.Errorf(
						"a required unusable disk must fail without changes: %q, %q",
						out.Status.Reason,
						n.modifications(),
					)
				}
			}
		})
	}
}

func TestWipeNeverTouchesDisksOfLVMSVolumeGroups(t *testing.T) {
	// After a reinstall the wiped annotation is gone, but the disks hold our VG (adopted) and
	// another class's VG: none of them may be wiped.
	n := newNode([]string{"/dev/sdb", "/dev/sdc", "/dev/sdd"}, map[string][]string{"/dev/sdd": {"ext4"}})
	n.addVG("vg1", []string{"/dev/sdb"}, lvm.Tag)
	n.addVG("vg2", []string{"/dev/sdc"}, lvm.Tag)
	spec := withPaths(lvmv1alpha1.LVMVolumeGroupSpec{}, ptr.To(true), "/dev/sdb", "/dev/sdc", "/dev/sdd")
	out := n.reconcile(t, vgmanager.Input{Name: "vg1", Spec: spec})
	if got := n.disks.Wiped(); !slices.Equal(got, []string{"/dev/sdd"}) {
		t.Errorf("wiped %q, want only /dev/sdd", got)
	}
	if out.Status.Status != lvmv1alpha1.VGStatusDegraded || !strings.Contains(out.Status.Reason, "/dev/sdc") {
		t.Errorf("status %s %q, want Degraded naming /dev/sdc (a PV of vg2)", out.Status.Status, out.Status.Reason)
	}
	if !slices.Equal(out.Status.Devices, []string{"/dev/sdb", "/dev/sdd"}) {
		t.Errorf("devices %v", out.Status.Devices)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(n *node)
		spec     lvmv1alpha1.LVMVolumeGroupSpec
		want     []string // in the reason
		unwanted bool
	}{
		{name: "new VG with a wipe", spec: withPaths(thinSpec(""), ptr.To(true), "/dev/sdb", "/dev/sdc"),
			want: []string{"wipe /dev/sdc", "create volume group vg1 on /dev/sdb, /dev/sdc", "create thin pool tp"}},
		{name: "new disk for an existing VG", setup: func(n *node) {
			n.addVG("vg1", []string{"/dev/sdb"}, lvm.Tag)
			n.addPool("vg1", true)
			n.disks.devs[1].Facts.Signatures = nil
		}, spec: thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic),
			want: []string{"extend volume group vg1 with /dev/sdc", "extend thin pool tp to 90% of the volume group"}},
		{name: "device removal", setup: func(n *node) {
			n.addVG("vg1", []string{"/dev/sdb", "/dev/sdc"}, lvm.Tag)
		}, spec: withPaths(lvmv1alpha1.LVMVolumeGroupSpec{}, nil, "/dev/sdb"),
			want: []string{"remove /dev/sdc from volume group vg1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode([]string{"/dev/sdb", "/dev/sdc"}, map[string][]string{"/dev/sdc": {"ext4"}})
			if tt.setup != nil {
				tt.setup(n)
			}
			out := n.reconcile(t, vgmanager.Input{Name: "vg1", Spec: tt.spec, DryRun: true})
			if got := n.modifications(); len(got) != 0 {
				t.Fatalf("dry-run ran modifying operations: %q", got)
			}
			if out.Wiped || out.Status.Status != lvmv1alpha1.VGStatusProgressing {
				t.Errorf("wiped=%t status %s", out.Wiped, out.Status.Status)
			}
			for _, w := range append(tt.want, "dry-run", "nothing was changed on disk") {
				if !strings.Contains(out.Status.Reason, w) {
					t.Errorf("reason %q lacks %q", out.Status.Reason, w)
				}
			}
		})
	}
}

func TestDeviceRemoval(t *testing.T) {
	tests := []struct {
		name        string
		keep        []string
		wantChanges []string
		wantStatus  lvmv1alpha1.VGStatusType
		wantReason  string
	}{
		{name: "empty PV is removed", keep: []string{"/dev/sdb"}, wantStatus: lvmv1alpha1.VGStatusReady,
			wantChanges: []string{"lvm vgreduce -y vg1 /dev/sdc", "lvm pvremove -y /dev/sdc"}},
		{
			name:       "PV holding data is refused",
			keep:       []string{"/dev/sdc"},
			wantStatus: lvmv1alpha1.VGStatusDegraded,
			wantReason: "refusing to remove /dev/sdb from volume group vg1: it holds 209715200 bytes of logical volume data that would be lost",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode([]string{"/dev/sdb", "/dev/sdc"}, nil)
			n.addVG("vg1", []string{"/dev/sdb", "/dev/sdc"}, lvm.Tag)
			n.fake.AddLV("vg1", "data", 50*lvm.DefaultExtentSize) // lvm2 allocates it on /dev/sdb
			out := n.reconcile(
				t,
				vgmanager.Input{Name: "vg1", Spec: withPaths(lvmv1alpha1.LVMVolumeGroupSpec{}, nil, tt.keep...)},
			)
			if got := n.modifications(); !slices.Equal(got, tt.wantChanges) {
				t.Errorf("changes %q, want %q", got, tt.wantChanges)
			}
			if out.Status.Status != tt.wantStatus || !strings.Contains(out.Status.Reason, tt.wantReason) {
				t.Errorf("status %s %q, want %s %q", out.Status.Status, out.Status.Reason, tt.wantStatus, tt.wantReason)
			}
		})
	}
}

func TestExistingVolumeGroups(t *testing.T) {
	tests := []struct {
		name        string
		tags        []string
		wantStatus  lvmv1alpha1.VGStatusType
		wantReason  string
		wantDevices []string
	}{
		{name: "tagged VG is adopted as is", tags: []string{lvm.Tag}, wantStatus: lvmv1alpha1.VGStatusReady,
			wantDevices: []string{"/dev/sdb", "/dev/sdc"}},
		{name: "untagged VG is never touched", tags: []string{"someone-else"}, wantStatus: lvmv1alpha1.VGStatusFailed,
			wantReason: "a volume group named vg1 exists on node node-a without the @lvms tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// After a reinstall: the VG and its pool exist, a blank disk is around, the spec asks
			// for more metadata; only an untagged VG must stop everything.
			n := newNode([]string{"/dev/sdb", "/dev/sdc"}, nil)
			n.addVG("vg1", []string{"/dev/sdb", "/dev/sdc"}, tt.tags...)
			n.addPool("vg1", true) // as lvms makes its pools
			out := n.reconcile(
				t,
				vgmanager.Input{Name: "vg1", Spec: thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic)},
			)
			if got := n.modifications(); len(got) != 0 {
				t.Errorf("changes %q, want none", got)
			}
			if out.Status.Status != tt.wantStatus || !strings.Contains(out.Status.Reason, tt.wantReason) ||
				!slices.Equal(out.Status.Devices, tt.wantDevices) {
				t.Errorf("status %+v", out.Status)
			}
		})
	}
}

func TestMissingDevices(t *testing.T) {
	tests := []struct {
		name       string
		spec       lvmv1alpha1.LVMVolumeGroupSpec
		disks      []string
		wantReason string
	}{
		{name: "required path missing", spec: withPaths(lvmv1alpha1.LVMVolumeGroupSpec{}, nil, "/dev/sdb", "/dev/sdz"),
			disks: []string{"/dev/sdb"}, wantReason: "deviceSelector.paths not found on node node-a: /dev/sdz"},
		{
			name: "no optional path exists",
			spec: lvmv1alpha1.LVMVolumeGroupSpec{DeviceSelector: &lvmv1alpha1.DeviceSelector{
				OptionalPaths: []lvmv1alpha1.DevicePath{"/dev/sdy", "/dev/sdz"}}},
			disks:      []string{"/dev/sdb"},
			wantReason: "none of the devices in deviceSelector exist on node node-a",
		},
		{name: "no usable disk", disks: []string{}, wantReason: "no usable devices found on node node-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(tt.disks, nil)
			out := n.reconcile(t, vgmanager.Input{Name: "vg1", Spec: tt.spec})
			if out.Status.Status != lvmv1alpha1.VGStatusFailed || !strings.Contains(out.Status.Reason, tt.wantReason) {
				t.Errorf("status %s %q, want Failed %q", out.Status.Status, out.Status.Reason, tt.wantReason)
			}
			if got := n.modifications(); len(got) != 0 {
				t.Errorf("changes %q", got)
			}
			if !out.CanGrow {
				t.Error("a node waiting for disks must look again")
			}
		})
	}
}

func TestTeardown(t *testing.T) {
	tests := []struct {
		name        string
		userLV      bool
		dryRun      bool
		tags        []string
		wantErr     error
		wantDone    bool
		wantChanges []string
	}{
		// The Client removes a pool in two steps: deactivate, then lvremove without -y (see
		// lvm.Client.RemoveThinPool).
		{name: "removes pool, VG and PV labels", tags: []string{lvm.Tag}, wantDone: true,
			wantChanges: []string{"lvm lvchange -an vg1/tp", "lvm lvremove vg1/tp", "lvm vgremove vg1",
				"lvm pvremove -y /dev/sdb", "lvm pvremove -y /dev/sdc"}},
		{
			name:    "refused while a volume exists",
			tags:    []string{lvm.Tag},
			userLV:  true,
			wantErr: vgmanager.ErrVolumesExist,
		},
		{name: "dry-run", tags: []string{lvm.Tag}, dryRun: true, wantErr: vgmanager.ErrDryRun},
		{name: "foreign VG is left alone", wantDone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode([]string{"/dev/sdb", "/dev/sdc"}, nil)
			n.addVG("vg1", []string{"/dev/sdb", "/dev/sdc"}, tt.tags...)
			n.addPool("vg1", true)
			if tt.userLV {
				n.addThinLV("vg1", "pvc-1234")
			}
			done, err := n.manager().Teardown(t.Context(), "vg1", thinSpec(""), tt.dryRun)
			if !errors.Is(err, tt.wantErr) || done != tt.wantDone {
				t.Fatalf("Teardown = %t, %v; want %t, %v", done, err, tt.wantDone, tt.wantErr)
			}
			if tt.userLV && !strings.Contains(err.Error(), "pvc-1234") {
				t.Errorf("refusal %q does not name the volume", err)
			}
			if got := n.modifications(); !slices.Equal(got, tt.wantChanges) {
				t.Errorf("changes %q, want %q", got, tt.wantChanges)
			}
		})
	}
}
