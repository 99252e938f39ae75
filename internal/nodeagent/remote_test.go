package nodeagent

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/go-logr/logr"

	csinode "github.com/lvm-operator/lvm-operator/internal/csi/node"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// serveLVMD serves svc on a unix socket until the returned stop is called.
func serveLVMD(t *testing.T, svc *lvmd.Service, sock string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- lvmd.Serve(ctx, svc, sock, time.Second) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
}

// receive returns the next value of ch, failing t after a while.
func receive(t *testing.T, ch <-chan []lvmd.Capacity) []lvmd.Capacity {
	t.Helper()
	select {
	case caps, ok := <-ch:
		if !ok {
			t.Fatal("capacity channel closed")
		}
		return caps
	case <-time.After(20 * time.Second):
		t.Fatal("no capacities from the external lvmd")
		return nil
	}
}

func freeOf(caps []lvmd.Capacity, class string) uint64 {
	for _, c := range caps {
		if c.DeviceClass == class {
			return c.FreeBytes
		}
	}
	return 0
}

// TestRemoteLVMD drives an lvmd served on a real unix socket through the agent's client: LV calls,
// the volume lookups of the CSI node service, capacities from the one stream, and the stream opened
// again after lvmd restarted.
func TestRemoteLVMD(t *testing.T) {
	svc, f := newService(t)
	sock := filepath.Join(t.TempDir(), "lvmd.sock")
	stop := serveLVMD(t, svc, sock)
	c, err := lvmd.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	r := NewRemoteLVMD(c, logr.Discard())
	r.retryMin, r.retryMax = 10*time.Millisecond, 50*time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan error, 1)
	go func() { started <- r.Start(ctx) }()

	be := backend(remoteBackend{RemoteLVMD: r})
	updates := be.Watch(ctx)
	first := receive(t, updates)
	local, err := svc.Capacities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, local) {
		t.Errorf("first capacities %+v, lvmd has %+v", first, local)
	}
	if caps, err := be.Capacities(ctx); err != nil || !reflect.DeepEqual(caps, local) {
		t.Errorf("Capacities = %+v, %v; want %+v", caps, err, local)
	}

	if _, err := be.CreateLV(
		ctx,
		lvmd.CreateLVRequest{Name: "thin-lv", DeviceClass: "thin", Size: 2 * gib},
	); err != nil {
		t.Fatal(err)
	}
	if got := freeOf(receive(t, updates), "thin"); got != 6*gib {
		t.Errorf("thin free after a 2 GiB create: %d, want 6 GiB", got)
	}
	f.AddLV("vg", "foreign", gib)
	if err := svc.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	vols := NewVolumes(be)
	vols.stat = present
	if path, size, err := vols.Device(ctx, "thin-lv"); err != nil || path != "/dev/vg/thin-lv" || size != int64(2*gib) {
		t.Errorf("Device(thin-lv) = %s, %d, %v", path, size, err)
	}
	for _, id := range []string{"nope", "foreign"} {
		if _, _, err := vols.Device(ctx, id); !errors.Is(err, csinode.ErrVolumeNotFound) {
			t.Errorf("Device(%s) = %v, want ErrVolumeNotFound", id, err)
		}
	}
	if _, err := be.GetLV(ctx, "foreign", "thick"); !errors.Is(err, lvmd.ErrNotOurs) {
		t.Errorf("GetLV(foreign) = %v, want ErrNotOurs", err)
	}

	// lvmd restarts: the stream is opened again and changes made meanwhile arrive.
	stop()
	if _, err := svc.CreateLV(
		ctx,
		lvmd.CreateLVRequest{Name: "while-down", DeviceClass: "thin", Size: gib},
	); err != nil {
		t.Fatal(err)
	}
	stop = serveLVMD(t, svc, sock)
	defer stop()
	for freeOf(receive(t, updates), "thin") != 5*gib { //nolint:revive // wait for the update after restart
	}

	cancel()
	if err := <-started; err != nil {
		t.Errorf("Start = %v", err)
	}
	// Start closed the subscription: the channel ends after what is still buffered.
	for range updates { //nolint:revive // drain until closed
	}
}

// TestRemoteLVMDCapacitiesWaitsForTheFirstReport: before lvmd answered, Capacities blocks until
// its context ends and says the external lvmd is not ready.
func TestRemoteLVMDCapacitiesWaitsForTheFirstReport(t *testing.T) {
	c, err := lvmd.Dial(filepath.Join(t.TempDir(), "nobody.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	r := NewRemoteLVMD(c, logr.Discard())
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := r.Capacities(ctx); !errors.Is(err, lvmd.ErrNotReady) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Capacities = %v, want ErrNotReady and the deadline", err)
	}
}
