package iolimit

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	mount "k8s.io/mount-utils"
)

// Defaults of Host.
const (
	DefaultCgroupRoot = "/sys/fs/cgroup"
	DefaultMountInfo  = "/proc/self/mountinfo"
	DefaultKubeletDir = "/var/lib/kubelet"
)

var (
	// ErrNoCgroup is wrapped when a pod's cgroup is not found under the cgroup root.
	ErrNoCgroup = errors.New("pod cgroup not found")
	// ErrNoIOController is wrapped when a pod's cgroup has no io.max: not cgroup v2, or the io
	// controller is not enabled for it.
	ErrNoIOController = errors.New("no io.max: the io controller of cgroup v2 is not enabled for the pod")
	// ErrNotTarget is wrapped for a path that is not a kubelet's CSI target path.
	ErrNotTarget = errors.New("not a CSI target path of the kubelet")
)

// Host finds the pods that use a volume and writes their io.max.
type Host struct {
	// CgroupRoot is where the cgroup v2 hierarchy is mounted (DefaultCgroupRoot when empty).
	CgroupRoot string
	// MountInfo is the mount table read (DefaultMountInfo when empty).
	MountInfo string
	// KubeletDir is the kubelet's root directory (DefaultKubeletDir when empty).
	KubeletDir string
}

// Use is one pod's publish of a volume: the pod, the target path and the device its IO goes to.
type Use struct {
	PodUID string
	Target string
	Device Device
}

func (h *Host) kubeletDir() string { return filepath.Clean(cmp.Or(h.KubeletDir, DefaultKubeletDir)) }

// Target is what a kubelet's CSI target path says: the volume (PV name) and the pod.
type Target struct {
	Volume, PodUID string
	Block          bool
}

// ParseTarget reads a target path below kubeletDir: <dir>/pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount
// (filesystem) or <dir>/plugins/kubernetes.io/csi/volumeDevices/publish/<pv>/<uid> (block).
func ParseTarget(kubeletDir, p string) (Target, error) {
	rel, err := filepath.Rel(filepath.Clean(kubeletDir), filepath.Clean(p))
	if err != nil || strings.HasPrefix(rel, "..") {
		return Target{}, fmt.Errorf("%w: %s", ErrNotTarget, p)
	}
	parts := strings.Split(rel, string(filepath.Separator))
	switch {
	case len(parts) == 6 && parts[0] == "pods" && parts[2] == "volumes" && parts[3] == "kubernetes.io~csi" &&
		parts[5] == "mount":
		return Target{Volume: parts[4], PodUID: parts[1]}, nil
	case len(parts) == 7 && strings.Join(parts[:5], "/") == "plugins/kubernetes.io/csi/volumeDevices/publish":
		return Target{Volume: parts[5], PodUID: parts[6], Block: true}, nil
	}
	return Target{}, fmt.Errorf("%w: %s", ErrNotTarget, p)
}

// Uses lists the pods that have volume (a PV name) published, from the mount table.
func (h *Host) Uses(volume string) ([]Use, error) {
	return h.uses(func(t Target, _ string) bool { return t.Volume == volume })
}

// UseOf is the publish at target, which must be mounted.
func (h *Host) UseOf(target string) (Use, error) {
	want := filepath.Clean(target)
	uses, err := h.uses(func(_ Target, mp string) bool { return mp == want })
	if err != nil {
		return Use{}, err
	}
	if len(uses) == 0 {
		return Use{}, fmt.Errorf("%s is not mounted (%s)", target, cmp.Or(h.MountInfo, DefaultMountInfo))
	}
	return uses[0], nil
}

func (h *Host) uses(match func(Target, string) bool) ([]Use, error) {
	file := cmp.Or(h.MountInfo, DefaultMountInfo)
	mis, err := mount.ParseMountInfo(file)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	var out []Use
	for _, mi := range mis {
		t, err := ParseTarget(h.kubeletDir(), mi.MountPoint)
		if err != nil || !match(t, filepath.Clean(mi.MountPoint)) {
			continue
		}
		d, err := deviceOf(mi, t.Block)
		if err != nil {
			return nil, fmt.Errorf("device of %s: %w", mi.MountPoint, err)
		}
		out = append(out, Use{PodUID: t.PodUID, Target: mi.MountPoint, Device: d})
	}
	return out, nil
}

// deviceOf is the block device a publish reads and writes: the device node bind-mounted at a block
// target, else the mount's source device (a filesystem's st_dev is not the device for every type:
// btrfs reports an anonymous one).
func deviceOf(mi mount.MountInfo, block bool) (Device, error) {
	if block {
		return BlockDevice(mi.MountPoint)
	}
	if d, err := BlockDevice(mi.Source); err == nil {
		return d, nil
	}
	if mi.Major > 0 {
		return Device{Major: uint32(mi.Major), Minor: uint32(mi.Minor)}, nil
	}
	return Device{}, fmt.Errorf("source %s is not a block device", mi.Source)
}

// BlockDevice is the device number of the block device node at p; an error when p is not one.
func BlockDevice(p string) (Device, error) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return Device{}, fmt.Errorf("stat %s: %w", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return Device{}, fmt.Errorf("%s is not a block device", p)
	}
	return Device{Major: unix.Major(st.Rdev), Minor: unix.Minor(st.Rdev)}, nil
}

// maxCgroupDepth bounds the search for a pod's cgroup: kubepods/<qos>/pod<uid> with the cgroupfs
// driver, kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid>.slice with systemd's, one
// more level for a kubelet --cgroup-root.
const maxCgroupDepth = 4

// PodCgroup finds the cgroup directory of pod uid.
func (h *Host) PodCgroup(uid string) (string, error) {
	root := filepath.Clean(cmp.Or(h.CgroupRoot, DefaultCgroupRoot))
	plain, systemd := "pod"+uid, "pod"+strings.ReplaceAll(uid, "-", "_")+".slice"
	found := ""
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return fs.SkipDir // a cgroup removed during the walk
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); name == plain || strings.HasSuffix(name, systemd) {
			found = p
			return fs.SkipAll
		}
		if strings.Count(strings.TrimPrefix(p, root), string(filepath.Separator)) >= maxCgroupDepth {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("search %s for the cgroup of pod %s: %w", root, uid, err)
	}
	if found == "" {
		return "", fmt.Errorf("%w: pod %s under %s", ErrNoCgroup, uid, root)
	}
	return found, nil
}

// Set writes l for device d into the io.max of cgroup dir cg (l zero removes d's limits).
func Set(cg string, d Device, l Limits) error {
	p := filepath.Join(cg, "io.max")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0) // as a shell's echo >: kernfs ignores the truncation
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", cg, ErrNoIOController)
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	_, err = f.WriteString(Line(d, l))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", Line(d, l), p, err)
	}
	return nil
}

// Get reads the limits of device d from the io.max of cgroup dir cg.
func Get(cg string, d Device) (Limits, error) {
	b, err := os.ReadFile(filepath.Join(cg, "io.max"))
	if errors.Is(err, fs.ErrNotExist) {
		return Limits{}, fmt.Errorf("%s: %w", cg, ErrNoIOController)
	}
	if err != nil {
		return Limits{}, fmt.Errorf("read io.max of %s: %w", cg, err)
	}
	all, err := ParseIOMax(string(b))
	if err != nil {
		return Limits{}, fmt.Errorf("io.max of %s: %w", cg, err)
	}
	return all[d], nil
}

// Apply sets l for use's device in its pod's cgroup.
func (h *Host) Apply(use Use, l Limits) error {
	cg, err := h.PodCgroup(use.PodUID)
	if err != nil {
		return err
	}
	return Set(cg, use.Device, l)
}
