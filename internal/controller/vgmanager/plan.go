package vgmanager

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// plan is what the manager observed and intends to do for one volume group. It is computed
// without changing anything.
type plan struct {
	in    Input
	state *lvm.State
	// vg is the existing, @lvms-tagged volume group; nil when there is none yet.
	vg *lvm.VG
	// verdicts are the filter's decisions about every block device of the node.
	verdicts []devices.Verdict
	// selector holds the resolved deviceSelector paths (required and optional) that exist;
	// requiredPaths only the resolved deviceSelector.paths.
	selector      []string
	requiredPaths []string
	// failure, when set, forbids every change (status Failed).
	failure string
	// problems are reasons for Degraded that do not stop the other changes.
	problems []string
	// wipeStep is set when the triple opt-in holds; wipe lists the disks it erases.
	wipeStep bool
	wipe     []string
	// add are disks to vgcreate (vg == nil) or vgextend with.
	add []string
	// notAdded are usable disks left out by the Static policy.
	notAdded []string
	// remove are empty PVs of the VG that are no longer selected.
	remove []string
	// pool describes the thin pool change, "" when none.
	pool string
	// adopt are the identity tags an existing VG lacks (made by LVMS or an older lvms).
	adopt []string
	// repair is the RAID repair of a RAID class's VG that lost disks.
	repair raidRepair
}

// plan observes the node and computes the changes for in.
func (m *NodeManager) plan(ctx context.Context, in Input) (*plan, error) {
	s, err := m.lvm.State(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan VG %s: %w", in.Name, err)
	}
	p := &plan{in: in, state: s}
	if vg, ok := s.VG(in.Name); ok {
		if !vg.Owned() {
			p.failure = fmt.Sprintf(
				"a volume group named %s exists on node %s without the @%s tag: it is not managed by lvms "+
					"and will not be touched; rename or remove it, or use another device class name",
				in.Name,
				in.NodeName,
				lvm.Tag,
			)
			return p, nil
		}
		if why := in.Identity.Foreign(vg.Tags); why != "" {
			p.failure = fmt.Sprintf(
				"the volume group %s seen on node %s is not this node's: %s (a disk shared between nodes or "+
					"moved from another cluster); it will not be touched: detach the disk, or, if it really "+
					"belongs here, fix its tags with vgchange --deltag/--addtag (docs/data-safety.md)",
				in.Name, in.NodeName, why,
			)
			return p, nil
		}
		p.vg = &vg
		p.adopt = in.Identity.Missing(vg.Tags)
	}
	missing := p.resolveSelector(m.resolve)
	p.verdicts, err = m.disks.Plan(ctx, devices.Policy{VGName: in.Name, Selector: p.selector, PVs: s.PVVolumeGroups()})
	if err != nil {
		return nil, fmt.Errorf("plan VG %s: %w", in.Name, err)
	}
	if in.Spec.DeviceSelector.ListsDisks() && len(p.selector) == 0 {
		// An empty selector means "every disk" to the filter: never get there.
		p.failOrDegrade("none of the devices in deviceSelector exist on node " + in.NodeName)
		return p, nil
	}
	p.planWipe()
	p.planDevices(missing)
	if err := m.planRepair(ctx, p); err != nil {
		return nil, err
	}
	p.planRemovals()
	p.planPool()
	return p, nil
}

// resolveSelector resolves the deviceSelector paths; it returns the required paths that are missing
// and reports a missing optional set.
func (p *plan) resolveSelector(resolve func(string) (string, error)) []string {
	sel := p.in.Spec.DeviceSelector
	if sel == nil {
		return nil
	}
	var missing []string
	for _, d := range sel.Paths {
		r, err := resolve(string(d))
		if err != nil {
			missing = append(missing, string(d))
			continue
		}
		p.selector = append(p.selector, r)
		p.requiredPaths = append(p.requiredPaths, r)
	}
	foundOptional := false
	for _, d := range sel.OptionalPaths {
		if r, err := resolve(string(d)); err == nil {
			p.selector = append(p.selector, r)
			foundOptional = true
		}
	}
	if len(sel.OptionalPaths) > 0 && !foundOptional {
		p.problems = append(p.problems, "none of deviceSelector.optionalPaths exists on node "+p.in.NodeName)
	}
	return missing
}

// failOrDegrade records a problem that stops the creation of the VG, or degrades an existing one.
func (p *plan) failOrDegrade(reason string) {
	if p.vg == nil {
		p.failure = reason
		return
	}
	p.problems = append(p.problems, reason)
}

// inVG reports whether dev is a PV of the planned VG.
func (p *plan) inVG(d devices.BlockDevice) bool {
	for _, n := range []string{d.Name, d.KName} {
		if pv, ok := p.state.PV(n); ok && pv.VGName == p.in.Name {
			return true
		}
	}
	return false
}

// ownedPV returns the @lvms-tagged VG d belongs to, if any.
func (p *plan) ownedPV(d devices.BlockDevice) (string, bool) {
	for _, n := range []string{d.Name, d.KName} {
		if pv, ok := p.state.PV(n); ok && pv.VGName != "" {
			if vg, ok := p.state.VG(pv.VGName); ok && vg.Owned() {
				return vg.Name, true
			}
		}
	}
	return "", false
}

func (p *plan) selected(d devices.BlockDevice) bool {
	return slices.Contains(p.selector, d.Name) || slices.Contains(p.selector, d.KName)
}

// planWipe applies the triple opt-in: explicit paths, forceWipeDevicesAndDestroyAllData, and not
// wiped on this node before. Only selected disks that the filter rejects are wiped, and never a
// disk of a volume group lvms manages (this one after a reinstall, or another device class).
func (p *plan) planWipe() {
	sel := p.in.Spec.DeviceSelector
	if sel == nil || len(sel.Paths) == 0 || sel.ForceWipeDevicesAndDestroyAllData == nil ||
		!*sel.ForceWipeDevicesAndDestroyAllData || p.in.AlreadyWiped {
		return
	}
	p.wipeStep = true
	for _, v := range p.verdicts {
		if v.Usable() || !p.selected(v.Device) || v.Device.ReadOnly {
			continue
		}
		if _, ours := p.ownedPV(v.Device); ours {
			continue
		}
		p.wipe = append(p.wipe, v.Device.Name)
	}
}

// planDevices decides which usable disks join the VG and checks the required paths.
func (p *plan) planDevices(missing []string) {
	if len(missing) > 0 {
		p.failOrDegrade(
			fmt.Sprintf("deviceSelector.paths not found on node %s: %s", p.in.NodeName, strings.Join(missing, ", ")),
		)
		if p.failure != "" {
			return
		}
	}
	for _, v := range p.verdicts {
		d := v.Device
		switch {
		case p.inVG(d) || slices.Contains(p.wipe, d.Name):
		case !v.Usable():
			if p.required(d) {
				p.failOrDegrade(
					fmt.Sprintf(
						"device %s of deviceSelector.paths cannot be used: %s",
						d.Name,
						strings.Join(v.Reasons, "; "),
					),
				)
			}
		case p.vg != nil && p.static() != "" && !p.replaces(d):
			p.notAdded = append(p.notAdded, d.Name)
		default:
			p.add = append(p.add, d.Name)
		}
	}
	if p.failure != "" {
		p.add, p.wipe, p.wipeStep = nil, nil, false
		return
	}
	if p.vg == nil && len(p.add)+len(p.wipe) == 0 {
		p.failure = "no usable devices found on node " + p.in.NodeName + " (see excluded for the reasons)"
		p.wipeStep = false
	}
}

// replaces reports whether d, usable and not in the VG, joins a RAID class's VG that lost disks: one
// that deviceSelector lists (the class keeps its disks otherwise).
func (p *plan) replaces(d devices.BlockDevice) bool {
	return p.in.Spec.RAIDConfig != nil && p.vg != nil && p.vg.MissingPVs > 0 && p.selected(d)
}

// planRepair plans the repair of a RAID class's VG that lost disks (repair.go), from a read of the VG
// with the RAID LVs' images: only then, as the state leaves them out.
func (m *NodeManager) planRepair(ctx context.Context, p *plan) error {
	if p.vg == nil || p.failure != "" || p.in.Spec.RAIDConfig == nil {
		return nil
	}
	if p.vg.MissingPVs > 0 {
		s, vg, err := m.stateAll(ctx, p.in.Name)
		if err != nil {
			return fmt.Errorf("plan VG %s: %w", p.in.Name, err)
		}
		p.repair = planRAIDRepair(s, vg, p.in.Spec.RAIDConfig, p.in.NodeName, len(p.add) > 0)
		if wait := repairWait(p.in, time.Now()); wait != "" {
			p.repair = raidRepair{problems: append(p.repair.problems, wait)}
		}
		p.problems = append(p.problems, p.repair.problems...)
	}
	p.repair.refresh = refreshable(p.state, p.in.Name)
	return nil
}

// required reports whether d is one of deviceSelector.paths (not optional).
func (p *plan) required(d devices.BlockDevice) bool {
	return slices.Contains(p.requiredPaths, d.Name) || slices.Contains(p.requiredPaths, d.KName)
}

// planRemovals lists PVs of the VG that deviceSelector no longer names. A PV holding extents is
// refused (it would lose data); so is the last PV.
func (p *plan) planRemovals() {
	sel := p.in.Spec.DeviceSelector
	if p.vg == nil || !sel.ListsDisks() {
		return
	}
	pvs := p.state.PVsOf(p.in.Name)
	for _, pv := range pvs {
		if pv.Missing() || slices.Contains(p.selector, pv.Name) || p.resolvedSelected(pv.Name) {
			continue // a missing PV leaves by the RAID repair (repair.go) or by hand, never here
		}
		switch {
		case pv.Size > pv.Free:
			p.problems = append(
				p.problems,
				fmt.Sprintf("refusing to remove %s from volume group %s: it holds %d bytes of "+
					"logical volume data that would be lost; move or delete the volumes on it, or put it back into deviceSelector",
					pv.Name, p.in.Name, pv.Size-pv.Free),
			)
		case len(p.remove)+1 >= len(pvs):
			p.problems = append(
				p.problems,
				fmt.Sprintf("refusing to remove %s: it is the last disk of volume group %s; "+
					"delete the device class instead", pv.Name, p.in.Name),
			)
		default:
			p.remove = append(p.remove, pv.Name)
		}
	}
}

// resolvedSelected matches a PV path whose device node is selected under another name (lvm2 may
// report /dev/mapper/... or a by-id path).
func (p *plan) resolvedSelected(name string) bool {
	for _, v := range p.verdicts {
		if (v.Device.Name == name || v.Device.KName == name) && p.selected(v.Device) {
			return true
		}
	}
	return false
}

// planPool describes the thin pool change; apply recomputes it from the state after the VG changed.
func (p *plan) planPool() {
	tp := p.in.Spec.ThinPoolConfig
	if tp == nil {
		return
	}
	if p.vg == nil {
		p.pool = fmt.Sprintf("create thin pool %s with %d%% of the free space", tp.Name, sizePercent(tp))
		return
	}
	a, err := poolActionFor(p.state, *p.vg, tp, uint64(len(p.add)))
	if err != nil {
		p.problems = append(p.problems, err.Error())
		return
	}
	p.pool = a.describe()
}

// changes describes every change the plan makes, in order; empty when there is nothing to do.
func (p *plan) changes() []string {
	var out []string
	if len(p.wipe) > 0 {
		out = append(
			out,
			fmt.Sprintf("wipe %s (deviceSelector.forceWipeDevicesAndDestroyAllData)", strings.Join(p.wipe, ", ")),
		)
	} else if p.wipeStep {
		out = append(out, "record the one-time wipe of node "+p.in.NodeName+" (no selected disk needs wiping)")
	}
	if len(p.adopt) > 0 {
		out = append(out, fmt.Sprintf("tag volume group %s with %s", p.in.Name, strings.Join(p.adopt, ", ")))
	}
	devs := append(slices.Clone(p.add), p.wipe...)
	switch {
	case p.vg == nil:
		out = append(out, fmt.Sprintf("create volume group %s on %s", p.in.Name, strings.Join(devs, ", ")))
	case len(devs) > 0:
		out = append(out, fmt.Sprintf("extend volume group %s with %s", p.in.Name, strings.Join(devs, ", ")))
	}
	out = append(out, p.repair.changes(p.in.Name)...)
	if len(p.remove) > 0 {
		out = append(out, fmt.Sprintf("remove %s from volume group %s", strings.Join(p.remove, ", "), p.in.Name))
	}
	if p.pool != "" {
		out = append(out, p.pool)
	}
	return out
}

// canGrow reports whether a disk appearing later would change the VG.
func (p *plan) canGrow() bool {
	return p.vg == nil || p.static() == ""
}

// static says why an existing VG keeps the disks it has, "" when it takes disks that appear later.
// A RAID class always keeps them (its layout is fixed at creation); otherwise deviceDiscoveryPolicy
// Static does, unless deviceSelector lists disks (then the list decides, and a listed disk that
// appears later joins). Unset is Static, as the webhook defaults a new class: a cluster whose webhook
// was bypassed or left out never takes a blank disk that appears later unless asked to (Dynamic).
func (p *plan) static() string {
	if p.in.Spec.RAIDConfig != nil {
		return "not added: a RAID device class keeps the disks it was created with"
	}
	if p.in.Spec.DeviceSelector.ListsDisks() {
		return ""
	}
	if p.in.Spec.DeviceDiscoveryPolicy != lvmv1alpha1.DeviceDiscoveryPolicyDynamic {
		return "not added: deviceDiscoveryPolicy is Static and the volume group already exists"
	}
	return ""
}

// status builds a VGStatus with the plan's devices and exclusions.
func (p *plan) status(st lvmv1alpha1.VGStatusType, reason string) lvmv1alpha1.VGStatus {
	out := lvmv1alpha1.VGStatus{Name: p.in.Name, Status: st, Reason: reason}
	if p.vg == nil {
		out.Excluded = p.excluded()
		return out // no VG of ours (none, or a foreign one whose disks are not ours to report)
	}
	for _, pv := range p.state.PVsOf(p.in.Name) {
		out.Devices = append(out.Devices, pv.Name)
	}
	slices.Sort(out.Devices)
	out.Excluded = p.excluded()
	out.Capacity = capacity(p.state, *p.vg, p.in.Spec.ThinPoolConfig)
	if cfg := p.in.Spec.RAIDConfig; cfg != nil {
		out.RAIDStatus = raidStatus(p.state, *p.vg, cfg)
	}
	return out
}

// excluded lists the devices not used, with the filter's reasons.
func (p *plan) excluded() []lvmv1alpha1.ExcludedDevice {
	var out []lvmv1alpha1.ExcludedDevice
	for _, v := range p.verdicts {
		name := v.Device.Name
		switch {
		case v.Facts.Gone && !p.selected(v.Device):
			// It left the node while the devices were probed (an LV being removed, whose type lsblk
			// could no longer tell): nothing of this node to report.
		case slices.Contains(p.notAdded, name):
			out = append(out, lvmv1alpha1.ExcludedDevice{Name: name, Reasons: []string{p.static()}})
		case !v.Usable() && !p.inVG(v.Device):
			reasons := slices.Clone(v.Reasons)
			if slices.Contains(p.wipe, name) {
				reasons = append(reasons, lvmv1alpha1.ExcludedWillBeWiped)
			} else if p.in.AlreadyWiped && p.selected(v.Device) {
				reasons = append(
					reasons,
					"not wiped: node "+p.in.NodeName+" already wiped its disks once for this device class",
				)
			}
			out = append(out, lvmv1alpha1.ExcludedDevice{Name: name, Reasons: reasons})
		}
	}
	return out
}

// observed is the status when nothing needs to change.
func (p *plan) observed() lvmv1alpha1.VGStatus {
	problems := p.problems
	if p.vg != nil {
		problems = append(slices.Clone(problems), poolFullness(p.state, p.in.Name, p.in.Spec.ThinPoolConfig)...)
	}
	if len(problems) > 0 {
		return p.status(lvmv1alpha1.VGStatusDegraded, strings.Join(problems, "; "))
	}
	return p.status(lvmv1alpha1.VGStatusReady, "")
}
