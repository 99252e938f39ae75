//go:build guest

package thinmeta_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
)

// TestGuestBenchmark measures (it does not assert) Delta of a fully written
// thin volume with 1 % of its chunks changed between two snapshots, and
// Allocated of the fully written snapshot: wall time, peak RSS of the tool
// (GNU time's %M) and of the Go side. Set THINMETA_BENCH_GIB (the volume
// size in GiB, at most 12 on the standard disks) to run it; THINMETA_BENCH_CHUNK_KIB sets the pool's
// chunk size (default 64, the worst case: the most mappings):
//
//	umlrun -standard-layout -env THINMETA_BENCH_GIB=10 -- thinmeta.test -test.run TestGuestBenchmark
func TestGuestBenchmark(t *testing.T) {
	size, _ := strconv.ParseUint(os.Getenv("THINMETA_BENCH_GIB"), 10, 64)
	if size == 0 {
		t.Skip("THINMETA_BENCH_GIB is not set")
	}
	chunk := 64 * kib
	if c, _ := strconv.ParseUint(os.Getenv("THINMETA_BENCH_CHUNK_KIB"), 10, 64); c != 0 {
		chunk = c * kib
	}
	g := newGuest(t)
	ctx := t.Context()
	const vg = "tmbench"
	g.vg(vg, guestDisks(t, 7)...)
	g.sh(
		"lvm",
		"lvcreate",
		"-y",
		"--type",
		"thin-pool",
		"-L",
		fmt.Sprintf("%dg", size+1),
		"-c",
		fmt.Sprintf("%dk", chunk/kib),
		"--poolmetadatasize",
		"256m",
		"-Zn",
		"-n",
		"pool",
		vg,
	)
	g.thin(vg, "pool", "vol", fmt.Sprintf("%dg", size))
	dev := "/dev/" + vg + "/vol"
	start := time.Now()
	g.sh("dd", "if=/dev/zero", "of="+dev, "bs=4M", fmt.Sprintf("count=%d", size*256), "oflag=direct", "status=none")
	t.Logf("MEASUREMENT setup: wrote %d GiB in %v", size, time.Since(start).Round(time.Millisecond))
	g.snapshot(vg, "vol", "s1")
	changed := writeEvery(t, dev, size*gib, chunk, 100)
	g.snapshot(vg, "vol", "s2")
	ts := g.lookup(vg, "s1", "s2")

	for i := range 3 {
		n, bytes, d := measure(t, func(fn func(thinmeta.Range) error) error { return g.r.Delta(ctx, ts[0], ts[1], fn) })
		t.Logf("MEASUREMENT delta %d GiB, chunk %d KiB, %d of %d chunks changed, run %d: %v, %d ranges, %d bytes",
			size, chunk/kib, changed, size*gib/chunk, i+1, d.Round(time.Millisecond), n, bytes)
	}
	for i := range 2 {
		n, bytes, d := measure(t, func(fn func(thinmeta.Range) error) error { return g.r.Allocated(ctx, ts[0], fn) })
		t.Logf("MEASUREMENT allocated %d GiB fully written, run %d: %v, %d ranges, %d bytes",
			size, i+1, d.Round(time.Millisecond), n, bytes)
	}
	peakRSS(t, ts)
}

// writeEvery writes one chunk of every nth chunk of dev (O_DIRECT) and
// returns how many it wrote.
func writeEvery(t *testing.T, dev string, size, chunk, nth uint64) uint64 {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_WRONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	buf, err := syscall.Mmap(
		-1,
		0,
		int(chunk),
		syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_ANON|syscall.MAP_PRIVATE,
	)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Munmap(buf) }()
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	n := uint64(0)
	for off := uint64(0); off+chunk <= size; off += nth * chunk {
		if _, err := f.WriteAt(buf, int64(off)); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// measure runs a listing, counting its ranges and bytes, and its time.
func measure(t *testing.T, list func(func(thinmeta.Range) error) error) (int, uint64, time.Duration) {
	t.Helper()
	n, bytes := 0, uint64(0)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	err := list(func(r thinmeta.Range) error { n++; bytes += r.Length; return nil })
	d := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("MEASUREMENT   Go side: %d KiB allocated during the call, heap in use %d KiB",
		(after.TotalAlloc-before.TotalAlloc)/1024, after.HeapInuse/1024)
	return n, bytes, d
}

// peakRSS runs each listing once with the tools under GNU time and reports
// their maximum resident set sizes, and the test process's own.
func peakRSS(t *testing.T, ts []thinmeta.Thin) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "rusage")
	timed := thinmeta.New(
		exec.NewHost(
			exec.WithPrefix(
				"/usr/bin/time",
				"-a",
				"-o",
				out,
				"-f",
				"%M KiB max RSS, %e s elapsed, %U s user, %S s sys: %C",
			),
		),
	)
	noop := func(thinmeta.Range) error { return nil }
	if err := timed.Delta(t.Context(), ts[0], ts[1], noop); err != nil {
		t.Fatal(err)
	}
	if err := timed.Allocated(t.Context(), ts[0], noop); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(line, "thin_") {
			t.Logf("MEASUREMENT peak RSS of the tool: %s", line)
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	t.Logf("MEASUREMENT peak RSS of the Go test process (whole run): %d KiB", ru.Maxrss)
}
