package lvmd_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvm/lvmtest"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// newIdentityEnv is newEnv on a service acting for node-a of cluster c1, with VG "vg" tagged tags.
func newIdentityEnv(t *testing.T, tags ...string) *env {
	t.Helper()
	f := lvmtest.New()
	f.AddVG("vg", 10*gib, extent, tags...)
	f.AddThinPool("vg", "pool", 4*gib)
	classes, err := lvmd.NewDeviceClassManager(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lvmd.NewService(lvmd.Options{
		Executor: f, Classes: classes, Identity: lvm.Identity{Node: "node-a", Cluster: "c1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, svc.Refresh(t.Context()), nil)
	return &env{t: t, fake: f, classes: classes, svc: svc}
}

func TestLVsCarryTheNodeIdentity(t *testing.T) {
	e := newIdentityEnv(t, lvm.Tag, "lvms.node=node-a", "lvms.cluster=c1")
	e.create("thick1", "thick", gib)
	e.create("thin1", "thin", gib)
	wantErr(t, e.svc.Refresh(t.Context()), nil)
	for _, lv := range []struct{ name, class string }{{"thick1", "thick"}, {"thin1", "thin"}} {
		got, err := e.svc.GetLV(t.Context(), lv.name, lv.class)
		wantErr(t, err, nil)
		if !slices.Contains(got.Tags, "lvms.node=node-a") || !slices.Contains(got.Tags, "lvms.cluster=c1") {
			t.Errorf("%s tags = %v, want the node and cluster identity", lv.name, got.Tags)
		}
	}
}

// A VG another node made (a shared disk) is never served: its classes are not ready and no LV is
// created in it.
func TestVolumeGroupOfAnotherNodeIsNotServed(t *testing.T) {
	e := newIdentityEnv(t, lvm.Tag, "lvms.node=node-b", "lvms.cluster=c1")
	caps, err := e.svc.Capacities(t.Context())
	wantErr(t, err, nil)
	for _, c := range caps {
		if c.Ready || c.FreeBytes != 0 {
			t.Errorf("capacity of %s on node-b's VG = %+v, want not ready", c.DeviceClass, c)
		}
	}
	e.fake.Reset()
	_, err = e.svc.CreateLV(t.Context(), lvmd.CreateLVRequest{Name: "x", DeviceClass: "thick", Size: gib})
	wantErr(t, err, lvmd.ErrNotReady)
	if !strings.Contains(err.Error(), `node "node-b"`) {
		t.Errorf("error %q does not name the other node", err)
	}
	if n := e.fake.Count("lvcreate"); n != 0 {
		t.Errorf("lvcreate ran %d times on another node's VG", n)
	}
}

func TestInvalidIdentityIsRefused(t *testing.T) {
	classes, err := lvmd.NewDeviceClassManager(testConfig())
	wantErr(t, err, nil)
	_, err = lvmd.NewService(lvmd.Options{
		Executor: lvmtest.New(), Classes: classes, Identity: lvm.Identity{Node: "a b"},
	})
	wantErr(t, err, lvmd.ErrInvalidArgument)
}
