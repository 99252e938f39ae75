//go:build guest

package snapmeta_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/nodeagent"
	"github.com/lvm-operator/lvm-operator/internal/snapmeta"
	"github.com/lvm-operator/lvm-operator/internal/testing/umlguest"
	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
)

// Guest tests run inside a User-mode Linux guest (hack/test-lvm.sh) as root with real lvm2,
// device-mapper and thin-provisioning-tools, on the disks in LVMS_GUEST_DISKS.

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
)

// TestGuestSnapshotMetadata drives the node's SnapshotMetadata service over gRPC on real lvm2, with
// volumes and snapshots made by lvmd as the node agent makes them: a 64 MiB thin volume gets known
// writes, snapshot 1, more known writes, snapshot 2. The allocated ranges of snapshot 1 and the
// delta from 1 to 2 are exactly those writes rounded out to the pool's 64 KiB chunks; a listing
// resumed page by page from each last offset (max_results 1) gives the same; a base snapshot of
// another volume is InvalidArgument and a snapshot in a thick class Unimplemented.
func TestGuestSnapshotMetadata(t *testing.T) {
	h, svc := guestLVMD(t)
	ctx := t.Context()
	create := func(name string) lvmd.LV {
		lv, err := svc.CreateLV(ctx, lvmd.CreateLVRequest{Name: name, DeviceClass: "thin", Size: uint64(64 * mib)})
		must(t, err)
		return lv
	}
	snapshot := func(name, source, class string) {
		_, err := svc.CreateSnapshot(ctx, lvmd.SnapshotRequest{
			Name: name, DeviceClass: class, Source: source, ReadOnly: true, Size: uint64(64 * mib),
		})
		must(t, err)
	}
	vol := create("vol")
	first := []block{{0, 4 * kib}, {mib + 60*kib, 8 * kib}, {10 * mib, 256 * kib}}
	second := []block{{mib + 64*kib, 4 * kib}, {32 * mib, 64 * kib}, {63 * mib, mib}}
	write(t, h, vol.Path, first...)
	snapshot("snap-1", "vol", "thin")
	write(t, h, vol.Path, second...)
	snapshot("snap-2", "vol", "thin")
	create("other")
	snapshot("other-snap", "other", "thin")
	thick, err := svc.CreateLV(
		ctx,
		lvmd.CreateLVRequest{Name: "thick-vol", DeviceClass: "thick", Size: uint64(8 * mib)},
	)
	must(t, err)
	snapshot("thick-snap", thick.Name, "thick")

	c := serve(t, snapmeta.NewNode(nodeagent.NewVolumes(svc), thinmeta.New(h)))
	chunk := 64 * kib
	allocated := func(offset int64, maxResults int32) ([]block, error) {
		s, err := c.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{
			SnapshotId: "snap-1", StartingOffset: offset, MaxResults: maxResults,
		})
		if err != nil {
			return nil, err
		}
		return recvAll(t, s.Recv)
	}
	delta := func(base string, offset int64, maxResults int32) ([]block, error) {
		s, err := c.GetMetadataDelta(ctx, &csi.GetMetadataDeltaRequest{
			BaseSnapshotId: base, TargetSnapshotId: "snap-2", StartingOffset: offset, MaxResults: maxResults,
		})
		if err != nil {
			return nil, err
		}
		return recvAll(t, s.Recv)
	}

	got, err := allocated(0, 0)
	if want := chunked(chunk, first...); err != nil || !slices.Equal(got, want) {
		t.Errorf("allocated ranges of snap-1: %v, %v; want %v", got, err, want)
	}
	t.Logf("allocated ranges of snap-1: %v", got)
	got, err = delta("snap-1", 0, 0)
	if want := chunked(chunk, second...); err != nil || !slices.Equal(got, want) {
		t.Errorf("delta snap-1 -> snap-2: %v, %v; want %v", got, err, want)
	}
	t.Logf("delta snap-1 -> snap-2: %v", got)
	paged := resume(t, func(offset int64) ([]block, error) { return delta("snap-1", offset, 1) })
	if want := chunked(chunk, second...); !slices.Equal(paged, want) {
		t.Errorf("delta resumed page by page: %v, want %v", paged, want)
	}

	if _, err := delta("other-snap", 0, 0); status.Code(err) != codes.InvalidArgument {
		t.Errorf("delta from a snapshot of another volume: %v, want InvalidArgument", err)
	}
	s, err := c.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: "thick-snap"})
	if err == nil {
		_, err = recvAll(t, s.Recv)
	}
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("allocated of a thick snapshot: %v, want Unimplemented", err)
	}
	t.Logf("thick snapshot: %v", err)
	if _, err := allocated(64*mib+1, 0); status.Code(err) != codes.OutOfRange {
		t.Errorf("allocated from beyond the capacity: %v, want OutOfRange", err)
	}
	held, err := thinmeta.New(h).Held(ctx, thinmeta.Pool{VG: "gvg", Name: "pool"})
	if err != nil || held {
		t.Errorf("after the calls, the pool holds a metadata snapshot: %t, %v", held, err)
	}
}

// resume lists page by page, each call from the end of the last range received, as a client
// continuing an interrupted listing does, until a call returns nothing.
func resume(t *testing.T, page func(offset int64) ([]block, error)) []block {
	t.Helper()
	var all []block
	offset := int64(0)
	for range 100 {
		got, err := page(offset)
		if err != nil {
			t.Fatalf("page from %d: %v", offset, err)
		}
		if len(got) == 0 {
			return mergeAdjacent(all)
		}
		all = append(all, got[0]) // max_results 1: the first message's range
		offset = got[0].off + got[0].len
	}
	t.Fatal("more than 100 pages")
	return nil
}

// block is a byte range.
type block struct{ off, len int64 }

func (b block) String() string { return fmt.Sprintf("%d+%d", b.off, b.len) }

// recvAll reads a stream to its end and returns its ranges in order.
func recvAll[R interface {
	GetVolumeCapacityBytes() int64
	GetBlockMetadata() []*csi.BlockMetadata
}](t *testing.T, recv func() (R, error)) ([]block, error) {
	t.Helper()
	var out []block
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if m.GetVolumeCapacityBytes() != 64*mib {
			t.Errorf("volume_capacity_bytes %d, want %d", m.GetVolumeCapacityBytes(), 64*mib)
		}
		for _, b := range m.GetBlockMetadata() {
			out = append(out, block{b.GetByteOffset(), b.GetSizeBytes()})
		}
	}
}

// chunked rounds ranges out to whole chunks, sorts and merges them.
func chunked(chunk int64, bs ...block) []block {
	var out []block
	for _, b := range bs {
		start := b.off / chunk * chunk
		end := (b.off + b.len + chunk - 1) / chunk * chunk
		out = append(out, block{start, end - start})
	}
	slices.SortFunc(out, func(a, b block) int { return int((a.off - b.off) >> 12) })
	return mergeAdjacent(out)
}

func mergeAdjacent(bs []block) []block {
	var out []block
	for _, b := range bs {
		if n := len(out); n > 0 && b.off <= out[n-1].off+out[n-1].len {
			out[n-1].len = max(out[n-1].off+out[n-1].len, b.off+b.len) - out[n-1].off
			continue
		}
		out = append(out, b)
	}
	return out
}

// write writes random data over the ranges with O_DIRECT dd (4 KiB aligned).
func write(t *testing.T, h *exec.Host, dev string, bs ...block) {
	t.Helper()
	for _, b := range bs {
		_, err := exec.Run(t.Context(), h, "dd", "if=/dev/urandom", "of="+dev, "bs=4096",
			fmt.Sprintf("seek=%d", b.off/4096), fmt.Sprintf("count=%d", b.len/4096), "oflag=direct", "status=none")
		must(t, err)
	}
}

// serve runs srv on a unix socket and returns a client of it.
func serve(t *testing.T, srv csi.SnapshotMetadataServer) csi.SnapshotMetadataClient {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "sm.sock")
	l, err := net.Listen("unix", sock)
	must(t, err)
	g := grpc.NewServer()
	csi.RegisterSnapshotMetadataServer(g, srv)
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	must(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return csi.NewSnapshotMetadataClient(conn)
}

// guestLVMD makes VG gvg on two guest disks with a 512 MiB thin pool of 64 KiB chunks, and an lvmd
// service with classes thin (the pool) and thick on it.
func guestLVMD(t *testing.T) (*exec.Host, *lvmd.Service) {
	t.Helper()
	disks := umlguest.Disks(t, 0, 2)
	h := exec.NewHost()
	c := lvm.New(h)
	ctx := t.Context()
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = exec.Run(cctx, h, "lvm", "vgremove", "-f", "-y", "gvg")
		_, _ = exec.Run(cctx, h, "lvm", append([]string{"pvremove", "-ff", "-y"}, disks...)...)
	})
	must(t, c.CreateVG(ctx, "gvg", disks))
	vg, err := c.OwnedVG(ctx, "gvg")
	must(t, err)
	must(
		t,
		c.CreateThinPool(ctx, vg, lvm.ThinPoolOptions{Name: "pool", Size: 512 << 20, ChunkSize: 64 << 10, Zero: true}),
	)
	spare := uint64(0)
	classes, err := lvmd.NewDeviceClassManager(&lvmd.Config{DeviceClasses: []lvmd.DeviceClass{
		{Name: "thin", VolumeGroup: "gvg", Type: lvmd.TypeThin, Default: true,
			ThinPool: &lvmd.ThinPoolConfig{Name: "pool", OverprovisionRatio: 10}},
		{Name: "thick", VolumeGroup: "gvg", SpareGB: &spare},
	}})
	must(t, err)
	svc, err := lvmd.NewService(lvmd.Options{Executor: h, Classes: classes})
	must(t, err)
	must(t, svc.Refresh(ctx))
	return h, svc
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
