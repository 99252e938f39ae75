package vgmanager

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// raidRepair is what the manager does about a RAID class's volume group that lost disks (lvm2's
// "allocate" fault policy, done by the agent as nodes run no dmeventd): rebuild each RAID LV's
// images that lay on a missing disk on free space of the volume group's other disks, then drop the
// missing disks from it. While a disk is missing lvm2 refuses every new volume and every resize in
// the volume group ("Cannot change VG while PVs are missing"), so the repair also gives the class
// back to its claims.
type raidRepair struct {
	// refresh are the RAID LVs to refresh (`lvchange --refresh`): their disk came back.
	refresh []string
	// lvs are the RAID LVs to repair (`lvconvert --repair`), in the state's order.
	lvs []string
	// dropMissing: no LV uses a missing disk (any more): remove them from the volume group
	// (`vgreduce --removemissing`, never forced).
	dropMissing bool
	// problems say why an LV is not repaired now, and what to do.
	problems []string
}

// planRAIDRepair plans the repair of volume group vg of a class with RAID configuration cfg on node
// from state s. joining is true when disks join the volume group first (their room is not in s:
// lvm2 decides then).
func planRAIDRepair(s *lvm.State, vg lvm.VG, cfg *lvmv1alpha1.RAIDConfig, node string, joining bool) raidRepair {
	var out raidRepair
	if cfg == nil || vg.MissingPVs == 0 {
		return out
	}
	if vg.MissingPVs > tolerance(cfg) {
		out.problems = append(out.problems, fmt.Sprintf(
			"%d disks of volume group %s are missing on node %s, more than %s tolerates: bring them back if at "+
				"all possible, they hold the data (docs/runbooks.md#lvmsraidfailed); lvms repairs nothing until then",
			vg.MissingPVs, vg.Name, node, cfg.Type))
		return out
	}
	var missing []string
	free := map[string]uint64{} // present PVs' free bytes, less what planned repairs take
	for _, pv := range s.PVsOf(vg.Name) {
		if pv.Missing() {
			missing = append(missing, pv.Name)
		} else {
			free[pv.Name] = pv.Free
		}
	}
	// Any LV left on a missing PV keeps it: a RAID image not yet repaired, or a volume that is not
	// RAID (its data is lost; --removemissing would need --force, never used).
	out.dropMissing = !slices.ContainsFunc(s.LVs, func(lv lvm.LV) bool {
		return lv.VGName == vg.Name && lv.OnAnyOf(missing)
	})
	for _, lv := range s.LVs {
		if lv.VGName != vg.Name || lv.Hidden || raidLevel(lv) == "" {
			continue
		}
		lost, kept := raidImages(s, lv, missing)
		if len(lost) == 0 {
			continue
		}
		if why := out.repairable(lv, lost, kept, free, joining); why != "" {
			out.problems = append(out.problems, why+" (node "+node+")")
			continue
		}
		out.lvs = append(out.lvs, lv.Name)
	}
	return out
}

// repairable reserves the room for the lost images of lv on the PVs free lists, or says why lv
// cannot be repaired now: lvm2 repairs only an LV in sync, and puts a new image only on disks that
// hold none of the LV's other images.
func (r *raidRepair) repairable(lv lvm.LV, lost, kept []lvm.LV, free map[string]uint64, joining bool) string {
	if lv.SyncPercent < 100 {
		return fmt.Sprintf("RAID LV %s lost an image on a missing disk and is %.2f%% in sync: lvm2 repairs it only "+
			"in sync, lvms tries again on its next look", lv.Name, lv.SyncPercent)
	}
	if joining {
		return ""
	}
	var need, room uint64
	for _, img := range lost {
		need += img.Size
	}
	var used []string
	for _, img := range kept {
		used = append(used, img.PVNames()...)
	}
	var eligible []string
	for pv, b := range free {
		if !slices.Contains(used, pv) {
			eligible = append(eligible, pv)
			room += b
		}
	}
	if need > room {
		return fmt.Sprintf("no room to repair RAID LV %s: its lost images need %s on disks that hold none of its "+
			"other images, %s is free there; list a blank disk of at least %s in the device class's "+
			"deviceSelector.optionalPaths: lvms adds it to the volume group and repairs onto it",
			lv.Name, bytesText(need), bytesText(room), bytesText(need))
	}
	slices.Sort(eligible)
	for _, pv := range eligible {
		take := min(need, free[pv])
		free[pv] -= take
		need -= take
	}
	return ""
}

// raidImages splits the image and metadata sub-LVs of RAID LV lv (lvm2 names them
// <lv>_rimage_<n> and <lv>_rmeta_<n>) into those with extents on a missing PV and the others.
func raidImages(s *lvm.State, lv lvm.LV, missing []string) (lost, kept []lvm.LV) {
	for _, sub := range s.LVs {
		if sub.VGName != lv.VGName || !sub.Hidden || !isImageOf(sub.Name, lv.Name) {
			continue
		}
		if sub.OnAnyOf(missing) {
			lost = append(lost, sub)
		} else {
			kept = append(kept, sub)
		}
	}
	return lost, kept
}

// isImageOf reports whether sub is named as an image or metadata sub-LV of RAID LV lv.
func isImageOf(sub, lv string) bool {
	for _, kind := range []string{"_rimage_", "_rmeta_"} {
		if n, ok := strings.CutPrefix(sub, lv+kind); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

// refreshable lists the RAID LVs of vg that lvm2 says need a refresh: an image's disk failed and is
// back (measured: a leg whose disk returned errors until its table was restored reads "refresh
// needed", and `lvchange --refresh` makes it healthy). No delay: the disk is there.
func refreshable(s *lvm.State, vg string) []string {
	var out []string
	for _, lv := range s.LVsOf(vg) {
		if raidLevel(lv) != "" && lv.HealthStatus == "refresh needed" {
			out = append(out, lv.Name)
		}
	}
	return out
}

// changes describes the repair's steps for the plan.
func (r raidRepair) changes(vg string) []string {
	var out []string
	if len(r.refresh) > 0 {
		out = append(out, fmt.Sprintf("refresh RAID LVs %s of volume group %s (a disk of theirs is back)",
			strings.Join(r.refresh, ", "), vg))
	}
	if len(r.lvs) > 0 {
		out = append(out, fmt.Sprintf("repair RAID LVs %s of volume group %s onto free space of its other disks",
			strings.Join(r.lvs, ", "), vg))
	}
	if r.dropMissing {
		out = append(out, "remove the missing disks from volume group "+vg)
	}
	return out
}

// repairRAID runs the planned repairs, then drops the missing disks once no LV uses them. A repair
// lvm2 refuses becomes a problem of the plan (Degraded), not an error: the others still run.
func (m *NodeManager) repairRAID(ctx context.Context, p *plan) error {
	log := ctrl.LoggerFrom(ctx).WithValues("volumeGroup", p.in.Name)
	for _, name := range p.repair.refresh {
		log.Info("Refreshing RAID LV: a disk of its images is back", "lv", name)
		if err := m.lvm.RefreshLV(ctx, *p.vg, name); err != nil {
			p.problems = append(p.problems, fmt.Sprintf("refresh of RAID LV %s failed: %v", name, err))
		}
	}
	if len(p.repair.lvs) == 0 && !p.repair.dropMissing {
		return nil
	}
	for _, name := range p.repair.lvs {
		log.Info("Repairing RAID LV: rebuilding its images of the missing disks", "lv", name)
		if err := m.lvm.RepairRAID(ctx, *p.vg, name); err != nil {
			log.Error(err, "RAID repair refused", "lv", name)
			p.problems = append(p.problems, fmt.Sprintf("repair of RAID LV %s failed: %v", name, err))
		}
	}
	s, vg, err := m.stateAll(ctx, p.in.Name)
	if err != nil {
		return fmt.Errorf("RAID repair of VG %s: %w", p.in.Name, err)
	}
	if !planRAIDRepair(s, vg, p.in.Spec.RAIDConfig, p.in.NodeName, false).dropMissing {
		return nil
	}
	log.Info("Removing the missing disks from the volume group", "missing", vg.MissingPVs)
	if err := m.lvm.RemoveMissingPVs(ctx, vg); err != nil {
		p.problems = append(p.problems, fmt.Sprintf("removing the missing disks of volume group %s failed: %v",
			p.in.Name, err))
	}
	return nil
}

// repairDelay is the RAID repair delay of option d: 0 means DefaultRAIDRepairDelay, negative none.
func repairDelay(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return DefaultRAIDRepairDelay
	}
	return d
}

// missingFrom returns when this agent first saw vg miss a disk (zero: not on an earlier pass).
func (r *Reconciler) missingFrom(vg string) time.Time {
	r.missingMu.Lock()
	defer r.missingMu.Unlock()
	return r.missingSince[vg]
}

// recordMissing remembers, from entry st of a pass that began at start, since when vg misses a disk,
// and forgets it once it misses none. The memory is the agent's: after a restart the delay begins
// again.
func (r *Reconciler) recordMissing(vg string, st lvmv1alpha1.VGStatus, start time.Time) {
	r.missingMu.Lock()
	defer r.missingMu.Unlock()
	switch {
	case st.RAIDStatus == nil: // not known on this pass (it failed, or not a RAID class): as it was
	case st.RAIDStatus.DegradedMemberCount == 0:
		delete(r.missingSince, vg)
	case r.missingSince[vg].IsZero():
		r.missingSince[vg] = start
	}
}

// repairWait says why the repair of in's VG waits at now for its missing disks to come back, "" when
// it does not.
func repairWait(in Input, now time.Time) string {
	if in.RepairDelay <= 0 {
		return ""
	}
	since := in.MissingSince
	if since.IsZero() {
		since = now
	}
	if due := since.Add(in.RepairDelay); now.Before(due) {
		return fmt.Sprintf("a disk of volume group %s is missing on node %s since %s: unless it comes back, "+
			"lvms repairs the RAID volumes from %s", in.Name, in.NodeName, since.UTC().Format(time.RFC3339),
			due.UTC().Format(time.RFC3339))
	}
	return ""
}

// stateAll reads VG name with lvm2's internal LVs (StateAll) and returns it with the VG.
func (m *NodeManager) stateAll(ctx context.Context, name string) (*lvm.State, lvm.VG, error) {
	s, err := m.lvm.StateAll(ctx, name)
	if err != nil {
		return nil, lvm.VG{}, err
	}
	vg, ok := s.VG(name)
	if !ok {
		return nil, lvm.VG{}, fmt.Errorf("read VG %s: %w", name, lvm.ErrNotFound)
	}
	return s, vg, nil
}

// bytesText prints n bytes as a binary quantity ("604Mi").
func bytesText(n uint64) string {
	return resource.NewQuantity(int64(min(n, 1<<62)), resource.BinarySI).String()
}
