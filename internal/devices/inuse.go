package devices

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Usage is what the host is doing with its block devices at one moment: mounts in every mount
// namespace, active swap areas and the device files processes hold open. Read it with ReadUsage.
type Usage struct {
	Mounts MountTable
	// swaps are the kernel names of active swap devices (e.g. "sdb2", "dm-3").
	swaps []string
	// openBy maps a device number ("major:minor") to the processes holding it open ("pid 42 (cat)").
	openBy map[string][]string
	// loopsOver maps a device number to the loop devices whose backing file is that block device
	// (losetup /dev/loopN /dev/sdX, with or without an offset): the loop device has no holder link
	// on it and does not hold it open with O_EXCL, so nothing else shows the disk is in use.
	loopsOver map[string][]string
}

// ReadUsage reads the Host's mount table (its own mountinfo plus that of every other mount
// namespace it can see), /proc/swaps and the open file descriptors of every process it can see.
func (h *Host) ReadUsage() (Usage, error) {
	mounts, err := h.ReadMounts()
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Mounts: mounts, openBy: map[string][]string{}}
	b, err := fs.ReadFile(h.fsys, "proc/swaps")
	switch {
	case errors.Is(err, fs.ErrNotExist): // a kernel without swap support
	case err != nil:
		return Usage{}, fmt.Errorf("read swaps: %w", err)
	default:
		for _, f := range ParseSwaps(b) {
			u.swaps = append(u.swaps, path.Base(f))
		}
	}
	h.scanProcesses(&u)
	u.loopsOver = h.loopsOverDevices()
	return u, nil
}

// loopsOverDevices maps the device number of every block device some loop device is set up over to
// those loop devices (/dev/loopN).
func (h *Host) loopsOverDevices() map[string][]string {
	out := map[string][]string{}
	files, _ := fs.Glob(h.fsys, "sys/class/block/loop*/loop/backing_file")
	for _, f := range files {
		backing, err := h.readTrimmed(f)
		if err != nil || !strings.HasPrefix(backing, "/") {
			continue
		}
		if devno, ok := h.backingDevno(backing); ok {
			out[devno] = append(out[devno], "/dev/"+path.Base(path.Dir(path.Dir(f))))
		}
	}
	return out
}

// backingDevno returns the device number of the block device a loop device's backing file names,
// and false when it names a regular file. The path is the one the loop was set up with, in the mount
// namespace it was set up in: it is resolved in the Host's filesystem when it names a block device
// there, and otherwise, when it names a node directly in /dev, by that kernel name in sysfs.
func (h *Host) backingDevno(backing string) (string, bool) {
	if devno, ok := blockDevno(h.fsys, strings.TrimPrefix(backing, "/")); ok {
		return devno, true
	}
	if path.Dir(backing) != "/dev" {
		return "", false
	}
	devno, err := h.readTrimmed("sys/class/block/" + path.Base(backing) + "/dev")
	return devno, err == nil
}

// ParseSwaps returns the file names of the active swap areas in /proc/swaps (escaped like mountinfo).
func ParseSwaps(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for first := true; sc.Scan(); first = false {
		fields := strings.Fields(sc.Text())
		if first && len(fields) > 0 && fields[0] == "Filename" || len(fields) == 0 {
			continue
		}
		out = append(out, unescapeOctal(fields[0]))
	}
	return out
}

// swap reports whether the kernel device name is an active swap area.
func (u Usage) swap(name string) bool { return slices.Contains(u.swaps, name) }

// scanProcesses records, for every process it can read, the block devices its descriptors refer to,
// and merges the mount table of every mount namespace other than the Host's own. Processes that end
// or cannot be read while it runs are skipped: what can be seen is what is checked.
func (h *Host) scanProcesses(u *Usage) {
	entries, _ := fs.ReadDir(h.fsys, "proc")
	seenNS := map[string]bool{}
	if ns, err := fs.ReadLink(h.fsys, path.Join(path.Dir(h.mountInfo), "ns/mnt")); err == nil {
		seenNS[ns] = true
	}
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		pid := e.Name()
		if _, err := strconv.Atoi(pid); err != nil || pid == self {
			continue
		}
		dir := "proc/" + pid
		if ns, err := fs.ReadLink(h.fsys, dir+"/ns/mnt"); err == nil && !seenNS[ns] {
			seenNS[ns] = true
			if b, err := fs.ReadFile(h.fsys, dir+"/mountinfo"); err == nil {
				u.Mounts.merge(ParseMountInfo(b), "in the mount namespace of pid "+pid)
			}
		}
		fds, err := fs.ReadDir(h.fsys, dir+"/fd")
		if err != nil {
			continue
		}
		var who string
		for _, fd := range fds {
			devno, ok := blockDevno(h.fsys, dir+"/fd/"+fd.Name())
			if !ok {
				continue
			}
			if who == "" {
				comm, _ := h.readTrimmed(dir + "/comm")
				who = fmt.Sprintf("pid %s (%s)", pid, comm)
			}
			if !slices.Contains(u.openBy[devno], who) {
				u.openBy[devno] = append(u.openBy[devno], who)
			}
		}
	}
}

// blockDevno returns the device number of the block device p refers to (following the link).
func blockDevno(fsys fs.FS, p string) (string, bool) {
	fi, err := fs.Stat(fsys, p)
	if err != nil || fi.Mode()&fs.ModeDevice == 0 || fi.Mode()&fs.ModeCharDevice != 0 {
		return "", false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	rdev := uint64(st.Rdev) //nolint:unconvert // Rdev is uint32 on some architectures
	return fmt.Sprintf("%d:%d", unix.Major(rdev), unix.Minor(rdev)), true
}

// openExclusive opens a block device with O_EXCL, which the kernel refuses (EBUSY) while the device
// is mounted, is swap, or is claimed by device-mapper, md or another exclusive opener.
func openExclusive(p string) (io.Closer, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_EXCL|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err //nolint:wrapcheck // an *fs.PathError already names the operation and path
	}
	return f, nil
}

// WithOpenExclusive replaces the exclusive open of devices (tests).
func WithOpenExclusive(open func(path string) (io.Closer, error)) Option {
	return func(h *Host) { h.openExcl = open }
}

// WithResolver replaces how a device path is resolved to its device node (tests; ResolvePath by
// default).
func WithResolver(resolve func(string) (string, error)) Option {
	return func(h *Host) { h.resolve = resolve }
}

// kernelName returns the kernel name (sysfs name) of the block device at dev, resolving links such as
// /dev/mapper/x or /dev/disk/by-id/y; a path that does not resolve to a block device sysfs knows is an
// error.
func (h *Host) kernelName(dev string) (string, error) {
	resolved, err := h.resolve(dev)
	if err != nil {
		return "", err
	}
	name := path.Base(resolved)
	if _, err := fs.Stat(h.fsys, "sys/class/block/"+name+"/dev"); err != nil {
		return "", fmt.Errorf("%s (%s) is not a block device known to sysfs: %w", dev, resolved, err)
	}
	return name, nil
}
