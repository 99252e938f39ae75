package lvmd_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// TestGRPCOverUnixSocket runs the server on a real unix socket and checks
// the client round trip, the error mapping and the Watch stream.
func TestGRPCOverUnixSocket(t *testing.T) {
	e := newEnv(t, testConfig())
	ctx, cancel := context.WithCancel(t.Context())
	sock := filepath.Join(t.TempDir(), "lvmd.sock")
	served := make(chan error, 1)
	go func() { served <- lvmd.Serve(ctx, e.svc, sock, time.Second) }()
	// The server may not listen yet: wait for it rather than fail.
	c, err := lvmd.Dial(sock, grpc.WithDefaultCallOptions(grpc.WaitForReady(true)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	lv, err := c.CreateLV(ctx, lvmd.CreateLVRequest{Name: "a", DeviceClass: "thin", Size: gib, Tags: []string{"pv=x"}})
	if err != nil || lv.Size != gib || lv.ThinPool != "pool" || len(lv.Tags) != 2 {
		t.Fatalf("CreateLV = %+v, %v", lv, err)
	}
	if free, err := c.FreeBytes(ctx, "thin"); err != nil || free != 7*gib {
		t.Errorf("FreeBytes = %d, %v", free, err)
	}
	if lv, err := c.ResizeLV(ctx, "a", "thin", 2*gib); err != nil || lv.Size != 2*gib {
		t.Errorf("ResizeLV = %+v, %v", lv, err)
	}
	if lv, err := c.ChangeLV(
		ctx,
		lvmd.ChangeLVRequest{Name: "a", DeviceClass: "thin", ReadAhead: "1024"},
	); err != nil ||
		lv.ReadAhead != "1024" ||
		lv.Size != 2*gib {
		t.Errorf("ChangeLV = %+v, %v", lv, err)
	}
	snap, err := c.CreateSnapshot(
		ctx,
		lvmd.SnapshotRequest{Name: "s", DeviceClass: "thin", Source: "a", ReadOnly: true},
	)
	if err != nil || !snap.ReadOnly || snap.Origin != "a" {
		t.Errorf("CreateSnapshot = %+v, %v", snap, err)
	}
	if lvs, err := c.ListLVs(ctx, "thin"); err != nil || len(lvs) != 2 {
		t.Errorf("ListLVs = %+v, %v", lvs, err)
	}
	if got, err := c.GetLV(ctx, "a", "thin"); err != nil || got.Size != 2*gib || got.Path != lv.Path {
		t.Errorf("GetLV = %+v, %v; want a of 2 GiB at %s", got, err, lv.Path)
	}
	errTests := []struct {
		name string
		err  error
		want error
	}{
		{
			"capacity",
			second(c.CreateLV(ctx, lvmd.CreateLVRequest{Name: "b", DeviceClass: "thin", Size: 100 * gib})),
			lvmd.ErrInsufficientCapacity,
		},
		{
			"unknown class",
			second(c.CreateLV(ctx, lvmd.CreateLVRequest{Name: "b", DeviceClass: "nope", Size: gib})),
			lvmd.ErrUnknownDeviceClass,
		},
		{"not found", second(c.ResizeLV(ctx, "nope", "thin", gib)), lvmd.ErrNotFound},
		{"get: not found", second(c.GetLV(ctx, "nope", "thin")), lvmd.ErrNotFound},
		{
			"change: invalid",
			second(c.ChangeLV(ctx, lvmd.ChangeLVRequest{Name: "a", DeviceClass: "thin", ReadAhead: "1k"})),
			lvmd.ErrInvalidArgument,
		},
		{"get: not ours", second(c.GetLV(ctx, "pool", "thick")), lvmd.ErrNotOurs},
		{
			"exists",
			second(c.CreateLV(ctx, lvmd.CreateLVRequest{Name: "a", DeviceClass: "thin", Size: 5 * gib})),
			lvmd.ErrAlreadyExists,
		},
		{"not ours", c.RemoveLV(ctx, "pool", "thick"), lvmd.ErrNotOurs},
		{"remove", c.RemoveLV(ctx, "s", "thin"), nil},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) { wantErr(t, tt.err, tt.want) })
	}

	wctx, wcancel := context.WithCancel(ctx)
	var seen [][]lvmd.Capacity
	werr := c.Watch(wctx, func(caps []lvmd.Capacity) error {
		seen = append(seen, caps)
		if len(seen) == 1 {
			_, err := e.svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: "w", DeviceClass: "thin", Size: gib})
			return err
		}
		wcancel()
		return nil
	})
	if werr != nil || len(seen) != 2 || seen[0][1].FreeBytes != 6*gib || seen[1][1].FreeBytes != 5*gib {
		t.Errorf("Watch: %v, seen %+v", werr, seen)
	}
	// The whole capacity crosses the socket, the volume group's own numbers included.
	local, err := e.svc.Capacities(ctx)
	wantErr(t, err, nil)
	if len(seen) == 2 && !reflect.DeepEqual(seen[1], local) {
		t.Errorf("Watch over gRPC saw %+v, the service has %+v", seen[1], local)
	}

	cancel()
	select {
	case err := <-served:
		wantErr(t, err, nil)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
	sctx, scancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer scancel()
	if _, err := c.FreeBytes(sctx, "thin"); err == nil || errors.Is(err, lvmd.ErrNotReady) {
		t.Errorf("call after stop: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

// TestServeRefusesToRemoveNonSockets: a regular file at the socket path (a mistyped --socket) is an
// error and stays as it was.
func TestServeRefusesToRemoveNonSockets(t *testing.T) {
	e := newEnv(t, testConfig())
	path := filepath.Join(t.TempDir(), "lvmd.sock")
	if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := lvmd.Serve(t.Context(), e.svc, path, time.Second); err == nil {
		t.Fatal("Serve replaced a regular file")
	} else {
		t.Logf("refused: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "data" {
		t.Fatal("the file was touched")
	}
}
