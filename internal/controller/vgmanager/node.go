package vgmanager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// Disks inventories and wipes the node's block devices; *devices.Host implements it.
type Disks interface {
	// Plan lists, probes and evaluates every block device; it changes nothing.
	Plan(ctx context.Context, p devices.Policy) ([]devices.Verdict, error)
	// Wipe erases every signature of dev (only with the opt-in).
	Wipe(ctx context.Context, dev string, opt devices.WipeOptIn) error
}

// LVM is the subset of *lvm.Client the manager uses. Every modifying call checks the @lvms tag.
type LVM interface {
	State(ctx context.Context, vgs ...string) (*lvm.State, error)
	StateAll(ctx context.Context, vg string) (*lvm.State, error)
	CreateVG(ctx context.Context, name string, devices []string, tags ...string) error
	AddVGTags(ctx context.Context, vg lvm.VG, tags ...string) error
	ExtendVG(ctx context.Context, vg lvm.VG, devices ...string) error
	ReduceVG(ctx context.Context, vg lvm.VG, devices ...string) error
	RemoveVG(ctx context.Context, vg lvm.VG) error
	RemovePV(ctx context.Context, pv lvm.PV) error
	CreateThinPool(ctx context.Context, vg lvm.VG, o lvm.ThinPoolOptions) error
	ExtendLV(ctx context.Context, vg lvm.VG, name string, o lvm.ExtendOptions) error
	SetThinPoolZero(ctx context.Context, vg lvm.VG, name string, zero bool) error
	RemoveThinPool(ctx context.Context, vg lvm.VG, name string) error
	RepairRAID(ctx context.Context, vg lvm.VG, name string, pvs ...string) error
	RemoveMissingPVs(ctx context.Context, vg lvm.VG) error
	RefreshLV(ctx context.Context, vg lvm.VG, name string) error
}

// NodeManager is the disk side of the volume-group manager: it turns one device class spec into an
// LVM volume group on this node, without Kubernetes. It holds no state between calls.
type NodeManager struct {
	disks Disks
	lvm   LVM
	// resolve turns a deviceSelector path (possibly a /dev/disk/by-id symlink) into a device node.
	resolve func(string) (string, error)
}

// NewNodeManager returns a NodeManager. resolve may be nil (devices.ResolvePath).
func NewNodeManager(disks Disks, lvmClient LVM, resolve func(string) (string, error)) *NodeManager {
	if resolve == nil {
		resolve = devices.ResolvePath
	}
	return &NodeManager{disks: disks, lvm: lvmClient, resolve: resolve}
}

// Input is one volume group to reconcile on this node.
type Input struct {
	// Name is the device class, and volume group, name.
	Name string
	Spec lvmv1alpha1.LVMVolumeGroupSpec
	// NodeName is this node (for messages).
	NodeName string
	// Identity tags the VG this node creates, and a VG whose tags name another node or cluster is
	// never touched (zero: no identity tags, no check).
	Identity lvm.Identity
	// AlreadyWiped is true once this node ran its one-time wipe for this volume group.
	AlreadyWiped bool
	// DryRun plans only: nothing is changed on disk.
	DryRun bool
	// MissingSince is when the caller first saw the VG miss a disk (zero: not before this pass), and
	// RepairDelay how long a missing disk has to come back before the RAID repair begins (0: at
	// once). A disk slow to appear at boot is thus not replaced.
	MissingSince time.Time
	RepairDelay  time.Duration
}

// Hooks let the caller act between the steps of Reconcile. Nil hooks are skipped; a hook error
// stops Reconcile before the next change.
type Hooks struct {
	// BeforeChange receives the Progressing status describing the plan before the first change.
	BeforeChange func(ctx context.Context, st lvmv1alpha1.VGStatus) error
	// AfterWipe runs right after the one-time wipe succeeded, before the VG is built on the disks.
	AfterWipe func(ctx context.Context) error
}

// Outcome is the result of Reconcile.
type Outcome struct {
	// Status is this node's entry for the volume group, derived from what was observed.
	Status lvmv1alpha1.VGStatus
	// Wiped is true when this call ran the one-time wipe step (the caller records it).
	Wiped bool
	// CanGrow is true when disks appearing later would change the volume group (Dynamic policy,
	// or the VG does not exist yet), i.e. when it is worth looking again without an event.
	CanGrow bool
	// Observed is the LVM state the status was derived from when the call changed nothing (nil
	// after a change): the caller can give lvmd its device classes from it without reading again.
	Observed *lvm.State
}

// Reconcile plans and, unless in.DryRun, applies the changes that make the volume group match in.
// The returned error is also described in Outcome.Status.
func (m *NodeManager) Reconcile(ctx context.Context, in Input, hooks Hooks) (Outcome, error) {
	p, err := m.plan(ctx, in)
	if err != nil {
		return Outcome{Status: failedStatus(in.Name, nil, err)}, err
	}
	out := Outcome{CanGrow: p.canGrow(), Observed: p.state}
	if p.failure != "" {
		return Outcome{Status: p.status(lvmv1alpha1.VGStatusFailed, p.failure), CanGrow: true, Observed: p.state}, nil
	}
	changes := p.changes()
	if len(changes) == 0 {
		out.Status = p.observed()
		return out, nil
	}
	if in.DryRun {
		// Each change is one step and none contains "; ": tools split the steps out of the reason.
		out.Status = p.status(
			lvmv1alpha1.VGStatusProgressing,
			lvmv1alpha1.DryRunReasonPrefix+strings.Join(changes, "; "),
		)
		return out, nil
	}
	out.Observed = nil // changing: what was observed is old from here on
	if hooks.BeforeChange != nil {
		st := p.status(lvmv1alpha1.VGStatusProgressing, "applying: will "+strings.Join(changes, "; "))
		if err := hooks.BeforeChange(ctx, st); err != nil {
			return Outcome{Status: st}, fmt.Errorf("before changing VG %s: %w", in.Name, err)
		}
	}
	if p.wipeStep {
		if err := m.wipe(ctx, p); err != nil {
			return Outcome{Status: failedStatus(in.Name, p, err)}, err
		}
		out.Wiped = true
		if hooks.AfterWipe != nil {
			if err := hooks.AfterWipe(ctx); err != nil {
				return Outcome{
						Status: failedStatus(in.Name, p, err),
						Wiped:  true,
					}, fmt.Errorf(
						"after wiping for VG %s: %w",
						in.Name,
						err,
					)
			}
		}
		// The wiped disks look different now: inventory again, as already wiped.
		in.AlreadyWiped = true
		if p, err = m.plan(ctx, in); err != nil {
			return Outcome{Status: failedStatus(in.Name, nil, err), Wiped: true}, err
		}
		if p.failure != "" {
			return Outcome{Status: p.status(lvmv1alpha1.VGStatusFailed, p.failure), Wiped: true, CanGrow: true}, nil
		}
	}
	if err := m.apply(ctx, p); err != nil {
		return Outcome{Status: failedStatus(in.Name, p, err), Wiped: out.Wiped, CanGrow: out.CanGrow}, err
	}
	st, err := m.observe(ctx, p)
	out.Status = st
	return out, err
}

// failedStatus reports err: Degraded while the VG exists (it keeps serving volumes), Failed before.
func failedStatus(name string, p *plan, err error) lvmv1alpha1.VGStatus {
	if p == nil {
		return lvmv1alpha1.VGStatus{Name: name, Status: lvmv1alpha1.VGStatusFailed, Reason: err.Error()}
	}
	if p.vg != nil {
		return p.status(lvmv1alpha1.VGStatusDegraded, err.Error())
	}
	return p.status(lvmv1alpha1.VGStatusFailed, err.Error())
}

// ErrVolumesExist refuses to remove a volume group that still holds logical volumes.
var ErrVolumesExist = errors.New("logical volumes still exist in the volume group")

// ErrDryRun is returned by Teardown in dry-run when it would change something; the error says what.
var ErrDryRun = errors.New("dry-run: nothing was changed on disk")

// Teardown removes the thin pool, the volume group and the PV labels of its disks. It refuses with
// ErrVolumesExist while LVs other than the thin pool exist, and never touches a VG without the
// @lvms tag (a foreign VG of that name is left alone and reported as done). done is true when
// nothing of the volume group is left. In dryRun it changes nothing and returns ErrDryRun saying
// what it would remove.
func (m *NodeManager) Teardown(
	ctx context.Context,
	name string,
	spec lvmv1alpha1.LVMVolumeGroupSpec,
	dryRun bool,
) (bool, error) {
	s, err := m.lvm.State(ctx)
	if err != nil {
		return false, fmt.Errorf("tear down VG %s: %w", name, err)
	}
	vg, ok := s.VG(name)
	if !ok || !vg.Owned() {
		return true, nil
	}
	pool := ""
	if spec.ThinPoolConfig != nil {
		pool = spec.ThinPoolConfig.Name
	}
	var others []string
	for _, lv := range s.LVsOf(name) {
		if lv.Name != pool || lv.SegType() != "thin-pool" {
			others = append(others, lv.Name)
		}
	}
	if len(others) > 0 {
		return false, fmt.Errorf(
			"tear down VG %s: %w: %s (delete their PVCs first)",
			name,
			ErrVolumesExist,
			strings.Join(others, ", "),
		)
	}
	pvs := s.PVsOf(name)
	if dryRun {
		var names []string
		for _, pv := range pvs {
			names = append(names, pv.Name)
		}
		return false, fmt.Errorf("%w; would remove thin pool %q, volume group %s and the PV labels of %s",
			ErrDryRun, pool, name, strings.Join(names, ", "))
	}
	if _, ok := s.LV(name, pool); ok && pool != "" {
		// Never -y: a thin LV created since the check above makes this fail instead of vanishing.
		if err := m.lvm.RemoveThinPool(ctx, vg, pool); err != nil {
			return false, fmt.Errorf("tear down VG %s: %w", name, err)
		}
	}
	if err := m.lvm.RemoveVG(ctx, vg); err != nil {
		return false, fmt.Errorf("tear down VG %s: %w", name, err)
	}
	var errs []error
	for _, pv := range pvs {
		if err := m.lvm.RemovePV(ctx, lvm.PV{Name: pv.Name}); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return false, fmt.Errorf("tear down VG %s: %w", name, err)
	}
	return true, nil
}
