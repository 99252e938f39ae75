//go:build guest

package node_test

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
)

// minFraction is the least share of the LV a filesystem of each type reports as its total. Measured
// in the guest at the minimum sizes: ext4 32 MiB 0.79 (inode tables and journal are not counted),
// xfs 300 MiB 0.79 (its 64 MiB log), btrfs 200 MiB 1.0 (statfs counts the whole device, the
// duplicated metadata included).
var minFraction = map[string]float64{lvmcsi.FSExt4: 0.75, lvmcsi.FSXFS: 0.75, lvmcsi.FSBtrfs: 0.95}

// checkStats calls NodeGetVolumeStats and compares it with statfs and, for btrfs, with
// `btrfs filesystem usage`; written bytes must show as used. It returns the total bytes.
func (g *guestNode) checkStats(t *testing.T, id, target, fsType string, lvSize, written uint64) uint64 {
	t.Helper()
	resp, err := g.srv.NodeGetVolumeStats(t.Context(), &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: target})
	must(t, err)
	var b, in *csi.VolumeUsage
	for _, u := range resp.GetUsage() {
		switch u.GetUnit() {
		case csi.VolumeUsage_BYTES:
			b = u
		case csi.VolumeUsage_INODES:
			in = u
		}
	}
	if b == nil || in == nil {
		t.Fatalf("NodeGetVolumeStats %s: usage %v, want bytes and inodes", id, resp.GetUsage())
	}
	t.Logf("NodeGetVolumeStats %s (LV %d bytes): bytes total %d used %d available %d; inodes total %d used %d free %d",
		id, lvSize, b.GetTotal(), b.GetUsed(), b.GetAvailable(), in.GetTotal(), in.GetUsed(), in.GetAvailable())
	total, used, avail := uint64(b.GetTotal()), uint64(b.GetUsed()), uint64(b.GetAvailable())
	if total > lvSize || float64(total) < minFraction[fsType]*float64(lvSize) {
		t.Errorf(
			"%s: total %d bytes, want between %.2f and 1 times the LV's %d",
			id,
			total,
			minFraction[fsType],
			lvSize,
		)
	}
	if used < written || used+avail > total {
		t.Errorf("%s: used %d available %d of %d, want used >= the %d bytes written and used+available <= total",
			id, used, avail, total, written)
	}
	var st unix.Statfs_t
	must(t, unix.Statfs(target, &st))
	if want := st.Blocks * uint64(st.Bsize); total != want {
		t.Errorf("%s: total %d bytes, statfs says %d", id, total, want)
	}
	if fsType == lvmcsi.FSBtrfs {
		g.checkBtrfsUsage(t, target, lvSize, avail)
	}
	return total
}

var (
	btrfsDeviceSize = regexp.MustCompile(`(?m)^\s*Device size:\s+(\d+)\s*$`)
	btrfsFree       = regexp.MustCompile(`(?m)^\s*Free \(estimated\):\s+(\d+)\s`)
)

// checkBtrfsUsage compares with btrfs's own accounting: the device it spans is the whole LV, and the
// estimated free space is close to what the stats report available (statfs also holds back the
// global block reserve, so it may report less, never more than a little).
func (g *guestNode) checkBtrfsUsage(t *testing.T, target string, lvSize, avail uint64) {
	t.Helper()
	out := g.sh(t, "btrfs", "filesystem", "usage", "-b", target)
	t.Logf("btrfs filesystem usage -b %s:\n%s", target, out)
	dev, free := parseUint(t, btrfsDeviceSize, out), parseUint(t, btrfsFree, out)
	if dev != lvSize {
		t.Errorf("btrfs device size %d, want the LV size %d", dev, lvSize)
	}
	const slack = 32 << 20
	if avail > free+slack || avail+slack < free {
		t.Errorf("available %d bytes, btrfs estimates %d free (want within %d)", avail, free, slack)
	}
}

func parseUint(t *testing.T, re *regexp.Regexp, s string) uint64 {
	t.Helper()
	m := re.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%s not found in:\n%s", re, s)
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	must(t, err)
	return n
}
