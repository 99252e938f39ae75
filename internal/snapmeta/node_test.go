package snapmeta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
)

const (
	kib = uint64(1) << 10
	mib = uint64(1) << 20
)

// fakeLVs finds the LVs of its map.
type fakeLVs map[string]lvmd.LV

func (f fakeLVs) FindLV(_ context.Context, id string) (lvmd.LV, bool, error) {
	if id == "broken" {
		return lvmd.LV{}, false, errors.New("lvmd is gone")
	}
	lv, ok := f[id]
	return lv, ok, nil
}

// fakeMeta lists ranges of thin volumes, or fails with err.
type fakeMeta struct {
	ranges map[string][]thinmeta.Range // by LV name; a delta lists the target's
	err    error
	calls  []string
}

func (f *fakeMeta) Lookup(_ context.Context, vg string, names ...string) ([]thinmeta.Thin, error) {
	out := make([]thinmeta.Thin, 0, len(names))
	for _, n := range names {
		out = append(out, thinmeta.Thin{Name: n, Pool: thinmeta.Pool{VG: vg, Name: "pool"}, ThinID: 1,
			Size: 16 * mib, ChunkSize: 64 * kib})
	}
	return out, nil
}

func (f *fakeMeta) list(name string, fn func(thinmeta.Range) error) error {
	if f.err != nil {
		return f.err
	}
	for _, r := range f.ranges[name] {
		if err := fn(r); err != nil {
			return fmt.Errorf("callback: %w", err)
		}
	}
	return nil
}

func (f *fakeMeta) Delta(_ context.Context, base, target thinmeta.Thin, fn func(thinmeta.Range) error) error {
	f.calls = append(f.calls, "delta "+base.Name+" "+target.Name)
	return f.list(target.Name, fn)
}

func (f *fakeMeta) Allocated(_ context.Context, lv thinmeta.Thin, fn func(thinmeta.Range) error) error {
	f.calls = append(f.calls, "allocated "+lv.Name)
	return f.list(lv.Name, fn)
}

var testLVs = fakeLVs{
	"s1":    {Name: "s1", DeviceClass: "thin", VolumeGroup: "vg", ThinPool: "pool"},
	"s2":    {Name: "s2", DeviceClass: "thin", VolumeGroup: "vg", ThinPool: "pool"},
	"other": {Name: "other", DeviceClass: "thin2", VolumeGroup: "vg2", ThinPool: "pool"},
	"thick": {Name: "thick", DeviceClass: "thick", VolumeGroup: "vg"},
}

// serve runs n on a unix socket and returns a client of it.
func serve(t *testing.T, n csi.SnapshotMetadataServer) csi.SnapshotMetadataClient {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "sm.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	csi.RegisterSnapshotMetadataServer(srv, n)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return csi.NewSnapshotMetadataClient(conn)
}

// response is what every message has: the type, the capacity and the blocks.
type response interface {
	GetBlockMetadataType() csi.BlockMetadataType
	GetVolumeCapacityBytes() int64
	GetBlockMetadata() []*csi.BlockMetadata
}

// collect reads a stream to its end: the blocks of each message, and the final error.
func collect[R response](t *testing.T, recv func() (R, error)) ([][]string, error) {
	t.Helper()
	var msgs [][]string
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return msgs, nil
		}
		if err != nil {
			return msgs, err
		}
		if m.GetBlockMetadataType() != csi.BlockMetadataType_VARIABLE_LENGTH ||
			m.GetVolumeCapacityBytes() != int64(16*mib) {
			t.Errorf("message type %v capacity %d, want VARIABLE_LENGTH and %d",
				m.GetBlockMetadataType(), m.GetVolumeCapacityBytes(), 16*mib)
		}
		var blocks []string
		for _, b := range m.GetBlockMetadata() {
			blocks = append(blocks, fmt.Sprintf("%d+%d", b.GetByteOffset(), b.GetSizeBytes()))
		}
		msgs = append(msgs, blocks)
	}
}

func TestPagingAndOrder(t *testing.T) {
	ranges := []thinmeta.Range{
		{Offset: 0, Length: 64 * kib},
		{Offset: mib, Length: 128 * kib},
		{Offset: 2 * mib, Length: 64 * kib},
	}
	for _, tc := range []struct {
		name       string
		offset     int64
		maxResults int32
		want       [][]string
	}{
		{"all in one message", 0, 0, [][]string{{"0+65536", "1048576+131072", "2097152+65536"}}},
		{"max_results 2", 0, 2, [][]string{{"0+65536", "1048576+131072"}, {"2097152+65536"}}},
		{"max_results 1", 0, 1, [][]string{{"0+65536"}, {"1048576+131072"}, {"2097152+65536"}}},
		// starting_offset inside the second range, not on a chunk: the range is cut at the chunk
		// that holds the offset, so the first range returned ends after it.
		{"starting_offset mid-range", int64(mib + 64*kib + 1), 0, [][]string{{"1114112+65536", "2097152+65536"}}},
		{"starting_offset after the last range", int64(3 * mib), 0, nil},
		{"starting_offset at the capacity", int64(16 * mib), 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta := &fakeMeta{ranges: map[string][]thinmeta.Range{"s1": ranges, "s2": ranges}}
			c := serve(t, NewNode(testLVs, meta))
			as, err := c.GetMetadataAllocated(t.Context(), &csi.GetMetadataAllocatedRequest{
				SnapshotId: "s1", StartingOffset: tc.offset, MaxResults: tc.maxResults,
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := collect(t, as.Recv)
			if err != nil || !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("allocated: %v, %v; want %v", got, err, tc.want)
			}
			ds, err := c.GetMetadataDelta(t.Context(), &csi.GetMetadataDeltaRequest{
				BaseSnapshotId: "s1", TargetSnapshotId: "s2", StartingOffset: tc.offset, MaxResults: tc.maxResults,
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err = collect(t, ds.Recv)
			if err != nil || !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("delta: %v, %v; want %v", got, err, tc.want)
			}
			if want := []string{"allocated s1", "delta s1 s2"}; !slices.Equal(meta.calls, want) {
				t.Errorf("reads %v, want %v", meta.calls, want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name         string
		base, target string
		offset       int64
		maxResults   int32
		readErr      error
		want         codes.Code
	}{
		{name: "no target", base: "s1", want: codes.InvalidArgument},
		{name: "negative offset", base: "s1", target: "s2", offset: -1, want: codes.InvalidArgument},
		{name: "negative max_results", base: "s1", target: "s2", maxResults: -1, want: codes.InvalidArgument},
		{name: "unknown snapshot", base: "s1", target: "gone", want: codes.NotFound},
		{name: "lvmd failing", base: "s1", target: "broken", want: codes.Internal},
		{name: "thick class", base: "thick", target: "s2", want: codes.Unimplemented},
		{name: "different volume groups", base: "s1", target: "other", want: codes.InvalidArgument},
		{name: "offset beyond the capacity", base: "s1", target: "s2", offset: int64(16*mib) + 1, want: codes.OutOfRange},
		{name: "not one volume", base: "s1", target: "s2", readErr: thinmeta.ErrDifferentVolumes, want: codes.InvalidArgument},
		{name: "snapshot held", base: "s1", target: "s2", readErr: thinmeta.ErrMetadataSnapshotHeld, want: codes.Unavailable},
		{name: "pool inactive", base: "s1", target: "s2", readErr: thinmeta.ErrPoolInactive, want: codes.Unavailable},
		{name: "hold deadline", base: "s1", target: "s2", readErr: thinmeta.ErrHoldDeadline, want: codes.DeadlineExceeded},
		{name: "thin id unknown", base: "s1", target: "s2", readErr: thinmeta.ErrNotFound, want: codes.NotFound},
		{name: "tool failure", base: "s1", target: "s2", readErr: errors.New("thin_delta: exit 1"), want: codes.Internal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := serve(t, NewNode(testLVs, &fakeMeta{err: tc.readErr}))
			ds, err := c.GetMetadataDelta(t.Context(), &csi.GetMetadataDeltaRequest{
				BaseSnapshotId:   tc.base,
				TargetSnapshotId: tc.target,
				StartingOffset:   tc.offset,
				MaxResults:       tc.maxResults,
			})
			if err == nil {
				_, err = collect(t, ds.Recv)
			}
			if status.Code(err) != tc.want {
				t.Errorf("delta: %v, want code %v", err, tc.want)
			}
			if tc.name == "different volume groups" || tc.name == "no target" {
				return // two-snapshot failures
			}
			id := tc.target
			if tc.base != "s1" {
				id = tc.base
			}
			as, err := c.GetMetadataAllocated(t.Context(), &csi.GetMetadataAllocatedRequest{
				SnapshotId: id, StartingOffset: tc.offset, MaxResults: tc.maxResults,
			})
			if err == nil {
				_, err = collect(t, as.Recv)
			}
			if status.Code(err) != tc.want {
				t.Errorf("allocated of %s: %v, want code %v", id, err, tc.want)
			}
		})
	}
}

// TestClientGoneEndsTheRead: a client that stops reading and cancels ends the listing (the reader's
// callback fails), so a metadata snapshot is not held for a client that left.
func TestClientGoneEndsTheRead(t *testing.T) {
	many := make([]thinmeta.Range, 100000)
	for i := range many {
		many[i] = thinmeta.Range{Offset: uint64(i) * 128 * kib, Length: 64 * kib}
	}
	meta := &fakeMeta{ranges: map[string][]thinmeta.Range{"s1": many}}
	done := make(chan error, 1)
	n := NewNode(testLVs, &doneMeta{fakeMeta: meta, done: done})
	c := serve(t, n)
	ctx, cancel := context.WithCancel(t.Context())
	as, err := c.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: "s1", MaxResults: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the read of 100000 ranges ended without an error after the client left")
	}
}

// doneMeta reports the end of each Allocated on done.
type doneMeta struct {
	*fakeMeta
	done chan error
}

func (d *doneMeta) Allocated(ctx context.Context, lv thinmeta.Thin, fn func(thinmeta.Range) error) error {
	err := d.fakeMeta.Allocated(ctx, lv, fn)
	d.done <- err
	return err
}
