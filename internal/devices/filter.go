package devices

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Policy is what devices are evaluated against.
type Policy struct {
	// VGName is the volume group the devices are for. Its own PVs pass.
	VGName string
	// Selector lists the device paths allowed (already resolved, see
	// ResolvePath); empty allows every device.
	Selector []string
	// PVs maps PV device paths to their VG name ("" for an orphan PV), as
	// read from lvm2.
	PVs map[string]string
}

// Candidate is a device with what was probed about it.
type Candidate struct {
	Device BlockDevice
	Facts  Facts
	// ProbeErr is set when probing failed; such a device is never usable.
	ProbeErr error
}

// paths returns the names the device is known by.
func (c Candidate) paths() []string {
	if c.Device.KName == c.Device.Name || c.Device.KName == "" {
		return []string{c.Device.Name}
	}
	return []string{c.Device.Name, c.Device.KName}
}

// pvVG returns the VG of the device if lvm2 knows it as a PV.
func (c Candidate) pvVG(p Policy) (vg string, isPV bool) {
	for _, n := range c.paths() {
		if vg, ok := p.PVs[n]; ok {
			return vg, true
		}
	}
	return "", false
}

// Predicate is one named rule of the device filter.
type Predicate struct {
	Name string
	// Reject returns why the device fails the rule; nothing when it passes.
	Reject func(c Candidate, p Policy) []string
}

// Predicates returns the device filter rules, in the order their reasons
// are reported.
func Predicates() []Predicate {
	return []Predicate{
		{"probed", rejectProbeFailure},
		{"present", rejectGone},
		{"in-selector", rejectNotSelected},
		{"writable", rejectReadOnly},
		{"not-suspended", rejectSuspended},
		{"partition-label", rejectPartLabel},
		{"device-type", rejectType},
		{"no-children", rejectChildren},
		{"not-mounted", rejectMounted},
		{"not-swap", rejectSwap},
		{"not-open", rejectOpen},
		{"exclusive-open", rejectNotExclusive},
		{"lvm-membership", rejectForeignPV},
		{"no-signature", rejectSignatures},
		{"loop-backing-file", rejectKubeletLoop},
		{"no-loop-over-it", rejectLoopBacked},
		{"loop-over-a-disk", rejectLoopOverDevice},
		{"non-empty", rejectEmpty},
	}
}

// Verdict is the filter's decision about one device.
type Verdict struct {
	Device BlockDevice
	Facts  Facts
	// Reasons are why the device cannot be used; empty when usable.
	Reasons []string
}

// Usable reports whether the device passed every rule.
func (v Verdict) Usable() bool { return len(v.Reasons) == 0 }

// Evaluate applies every predicate to c.
func Evaluate(c Candidate, p Policy) Verdict {
	v := Verdict{Device: c.Device, Facts: c.Facts}
	for _, pred := range Predicates() {
		v.Reasons = append(v.Reasons, pred.Reject(c, p)...)
	}
	return v
}

// Plan lists all block devices, probes each and evaluates it against p. It
// changes nothing on the host.
func (h *Host) Plan(ctx context.Context, p Policy) ([]Verdict, error) {
	tree, err := h.List(ctx)
	if err != nil {
		return nil, err
	}
	usage, err := h.ReadUsage()
	if err != nil {
		return nil, err
	}
	var out []Verdict
	for _, d := range Flatten(tree) {
		c := Candidate{Device: d}
		c.Facts, c.ProbeErr = h.Inspect(ctx, d, usage)
		out = append(out, Evaluate(c, p))
	}
	return out, nil
}

// ResolvePath resolves a device path such as /dev/disk/by-id/... to the
// device node it links to; the result must be under /dev.
func ResolvePath(p string) (string, error) {
	if !strings.HasPrefix(p, "/dev/") {
		return "", fmt.Errorf("device path %q does not start with /dev/", p)
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("resolve device path %s: %w", p, err)
	}
	if !strings.HasPrefix(r, "/dev/") {
		return "", fmt.Errorf("device path %s resolves to %s, outside /dev", p, r)
	}
	return r, nil
}

func rejectProbeFailure(c Candidate, _ Policy) []string {
	if c.ProbeErr != nil {
		return []string{"could not be probed: " + c.ProbeErr.Error()}
	}
	return nil
}

func rejectNotSelected(c Candidate, p Policy) []string {
	if len(p.Selector) == 0 {
		return nil
	}
	for _, n := range c.paths() {
		if slices.Contains(p.Selector, n) {
			return nil
		}
	}
	return []string{"is not in the device selector"}
}

func rejectReadOnly(c Candidate, _ Policy) []string {
	if c.Device.ReadOnly {
		return []string{"is read-only"}
	}
	return nil
}

func rejectSuspended(c Candidate, _ Policy) []string {
	if c.Device.State == "suspended" || c.Facts.Suspended {
		return []string{"is suspended"}
	}
	return nil
}

func rejectPartLabel(c Candidate, _ Policy) []string {
	label := c.Facts.PartLabel
	if label == "" {
		label = c.Device.PartLabel
	}
	lower := strings.ToLower(label)
	for _, word := range []string{"bios", "boot", "reserved"} {
		if strings.Contains(lower, word) {
			return []string{fmt.Sprintf("partition label contains '%s'", word)}
		}
	}
	return nil
}

func rejectType(c Candidate, _ Policy) []string {
	switch c.Device.Type {
	case "rom":
		return []string{"is a read-only memory device (type rom)"}
	case "lvm":
		return []string{"is an LVM logical volume (type lvm)"}
	case "crypt":
		if encryptedLV(c.Device) {
			return []string{"is the dm-crypt mapping of an LVM logical volume (type crypt)"}
		}
	}
	return nil
}

// encryptedLV reports whether d is a dm-crypt mapping stacked on an LVM logical volume, such as the
// mapping the CSI node service opens on an encrypted volume: a volume's device, never a disk.
func encryptedLV(d BlockDevice) bool {
	return d.Type == "crypt" && d.ParentType == "lvm"
}

func rejectChildren(c Candidate, p Policy) []string {
	if ourPV(c, p) {
		return nil // a PV of our VG: its holders are our own LVs
	}
	var kids []string
	add := func(n string) {
		if n != "" && !slices.Contains(kids, n) {
			kids = append(kids, n)
		}
	}
	for _, ch := range c.Device.Children {
		add(ch.KName)
	}
	for _, n := range c.Facts.Partitions {
		add(n)
	}
	for _, n := range c.Facts.Holders {
		add(n)
	}
	if len(kids) == 0 {
		return nil
	}
	slices.Sort(kids)
	return []string{"has children: " + strings.Join(kids, ", ")}
}

func rejectMounted(c Candidate, _ Policy) []string {
	if len(c.Facts.MountPoints) == 0 {
		return nil
	}
	return []string{"is mounted at " + strings.Join(c.Facts.MountPoints, ", ")}
}

func rejectSwap(c Candidate, _ Policy) []string {
	if c.Facts.Swap {
		return []string{"is an active swap area"}
	}
	return nil
}

func rejectOpen(c Candidate, p Policy) []string {
	if len(c.Facts.OpenBy) == 0 || ourPV(c, p) {
		return nil
	}
	return []string{"is held open by " + strings.Join(c.Facts.OpenBy, ", ")}
}

func rejectNotExclusive(c Candidate, p Policy) []string {
	// Skipped when another rule already explains it (mounted, swap, holders); our own PVs are claimed
	// by our LVs.
	if c.Facts.NotExclusive == "" || ourPV(c, p) || len(c.Facts.MountPoints) > 0 || c.Facts.Swap ||
		len(c.Facts.Holders) > 0 || len(c.Facts.Partitions) > 0 {
		return nil
	}
	return []string{"cannot be opened exclusively: " + c.Facts.NotExclusive}
}

// ourPV reports whether the device is a PV of the policy's volume group.
func ourPV(c Candidate, p Policy) bool {
	vg, isPV := c.pvVG(p)
	return isPV && vg != "" && vg == p.VGName
}

func rejectForeignPV(c Candidate, p Policy) []string {
	if vg, isPV := c.pvVG(p); isPV && vg != "" && vg != p.VGName {
		return []string{"is a PV of another volume group: " + vg}
	}
	return nil
}

func rejectSignatures(c Candidate, p Policy) []string {
	var out []string
	if c.Facts.PartTable != "" {
		out = append(out, "has a partition table: "+c.Facts.PartTable)
	}
	sigs := slices.Clone(c.Facts.Signatures)
	if fs := c.Device.FSType; fs != "" && !slices.Contains(sigs, fs) {
		sigs = append(sigs, fs) // udev's view, when it has one
	}
	for _, s := range sigs {
		if s == "LVM2_member" {
			if _, isPV := c.pvVG(p); isPV {
				continue // orphan, ours, or reported by rejectForeignPV
			}
			out = append(out, "has an LVM2_member signature but lvm2 does not list it as a PV")
			continue
		}
		out = append(out, "has a filesystem signature: "+s)
	}
	return out
}

// rejectGone rejects a device that went away while the devices were probed, and a loop device with
// no file attached; neither was read (on a node that ends many Block volumes at once, lsblk lists
// loop devices the kubelet detaches a moment later).
func rejectGone(c Candidate, _ Policy) []string {
	switch {
	case c.Facts.Gone:
		return []string{"no longer exists"}
	case c.Facts.Detached:
		return []string{"is a loop device with no backing file"}
	}
	return nil
}

func rejectKubeletLoop(c Candidate, _ Policy) []string {
	if kubeletLoop(c.Device, c.Facts) {
		return []string{"is a loop device backing kubelet plugin storage"}
	}
	return nil
}

// rejectLoopBacked rejects a device some loop device is set up over: its data is the loop device's,
// in use or not, although no holder link, open descriptor, exclusive open or signature (with an
// offset, none at its start) shows it.
func rejectLoopBacked(c Candidate, _ Policy) []string {
	if len(c.Facts.LoopsOver) > 0 {
		return []string{"is the backing device of loop device " + strings.Join(c.Facts.LoopsOver, ", ") +
			": detach it (losetup -d) or choose another disk"}
	}
	return nil
}

// rejectLoopOverDevice rejects a loop device set up over a block device: it is the same storage as
// that device, which the filter never offers while the loop exists (rejectLoopBacked); use the
// device itself.
func rejectLoopOverDevice(c Candidate, _ Policy) []string {
	if c.Facts.LoopOverDevice {
		return []string{"is a loop device over block device " + c.Facts.LoopBackingFile +
			": use that device itself (detach the loop first)"}
	}
	return nil
}

// kubeletLoop reports whether d is a loop device whose backing file is the kubelet's: the kubelet
// attaches one to each Block volume a pod uses.
func kubeletLoop(d BlockDevice, f Facts) bool {
	return d.Type == "loop" && strings.Contains(f.LoopBackingFile, "plugins/kubernetes.io")
}

func rejectEmpty(c Candidate, _ Policy) []string {
	if c.Device.Size == 0 {
		return []string{"has size 0"}
	}
	return nil
}
