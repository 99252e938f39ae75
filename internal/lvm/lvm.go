// Package lvm runs typed lvm2 operations through an exec.Executor and parses
// lvm2's JSON reports into typed state.
//
// Every command is one `lvm <subcommand>` execution, so counting "lvm"
// executions measures the cost of an operation. The state of all VGs, PVs
// and LVs is read with a single `lvm fullreport` (see Client.State).
//
// Safety: every operation that modifies a VG, its LVs or its PVs takes the VG
// as read from the state and refuses with ErrNotOurs unless the VG carries
// the lvms Tag. VGs are only ever created with that tag.
package lvm

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// Tag marks the VGs this operator owns; `vgcreate --addtag lvms` (written as
// @lvms in lvm2 selections).
const Tag = "lvms"

// Command is the lvm2 binary; subcommands are its first argument.
const Command = "lvm"

// Client runs lvm2 commands. It holds no state of its own and is safe for
// concurrent use (lvm2 serialises changes with its own VG locks).
type Client struct {
	exec   exec.Executor
	id     Identity
	config ConfigFunc
}

// New returns a Client running commands through e.
func New(e exec.Executor) *Client {
	return &Client{exec: e}
}

// run executes `lvm args...` (see CommandArgs) and classifies a failure.
func (c *Client) run(ctx context.Context, args ...string) error {
	_, err := c.runRepairing(ctx, args...)
	return classify(err)
}

// State reads all VGs, PVs (including orphans) and LVs with one
// `lvm fullreport`. When vgs are given, only those VGs are reported (and
// orphan PVs are left out); a missing VG is then ErrNotFound.
func (c *Client) State(ctx context.Context, vgs ...string) (*State, error) {
	return c.state(ctx, ReportArgs(vgs...), vgs)
}

// StateAll reads the state of VG vg with lvm2's internal LVs as well (Hidden: the images and
// metadata of RAID LVs, a thin pool's data and metadata), which State leaves out: `lvm fullreport
// --all`.
func (c *Client) StateAll(ctx context.Context, vg string) (*State, error) {
	args := append([]string{"fullreport", "--all"}, ReportArgs(vg)[1:]...)
	return c.state(ctx, args, []string{vg})
}

func (c *Client) state(ctx context.Context, args, vgs []string) (*State, error) {
	for _, vg := range vgs {
		if err := ValidName(vg); err != nil {
			return nil, fmt.Errorf("read LVM state: %w", err)
		}
	}
	var s *State
	err := c.Read(ctx, func(r io.Reader) error {
		var err error
		s, err = DecodeReport(r)
		return err
	}, args...)
	if err != nil {
		return nil, fmt.Errorf("read LVM state: %w", err)
	}
	return s, nil
}

// OwnedVG reads the state of VG name and returns it if it carries the Tag;
// ErrNotFound or ErrNotOurs otherwise.
func (c *Client) OwnedVG(ctx context.Context, name string) (VG, error) {
	s, err := c.State(ctx, name)
	if err != nil {
		return VG{}, err
	}
	vg, ok := s.VG(name)
	if !ok {
		return VG{}, fmt.Errorf("VG %s: %w", name, ErrNotFound)
	}
	if err := c.checkOwned(vg); err != nil {
		return VG{}, err
	}
	return vg, nil
}

func checkOwned(vg VG) error {
	if vg.Name == "" {
		return fmt.Errorf("%w: no VG given", ErrInvalidArgument)
	}
	if !vg.Owned() {
		return fmt.Errorf("VG %s has tags %v, not %q: %w", vg.Name, vg.Tags, Tag, ErrNotOurs)
	}
	return ValidName(vg.Name)
}

// validNameRE is lvm2's character set for VG and LV names; a name must not
// start with '-' so it can never be taken for an option.
var validNameRE = regexp.MustCompile(`^[a-zA-Z0-9+_.][a-zA-Z0-9+_.-]*$`)

// ValidName checks a VG or LV name against lvm2's rules: 1–127 characters of A-Za-z0-9+_.-, not
// starting with '-', not "." or "..".
func ValidName(name string) error {
	if len(name) > 127 || !validNameRE.MatchString(name) || name == "." || name == ".." {
		return fmt.Errorf("%w: invalid VG/LV name %q", ErrInvalidArgument, name)
	}
	return nil
}

func validDevice(dev string) error {
	if len(dev) < 2 || dev[0] != '/' {
		return fmt.Errorf("%w: device %q is not an absolute path", ErrInvalidArgument, dev)
	}
	return nil
}

// sizeArg renders bytes for -L/-V/-c/--poolmetadatasize, rounded up to the
// 512-byte sector lvm2 requires.
func sizeArg(bytes uint64) string {
	if r := bytes % 512; r != 0 {
		bytes += 512 - r
	}
	return fmt.Sprintf("%db", bytes)
}

func tagArgs(tags []string) ([]string, error) {
	var args []string
	for _, t := range tags {
		if err := ValidTag(t); err != nil {
			return nil, err
		}
		args = append(args, "--addtag", t)
	}
	return args, nil
}

// validTagRE is lvm2's tag character set (lvm(8) "Tags"); maxTagLen bounds a tag's length. The
// bound is checked apart: as a counted repetition ({1,1000}) Go's regexp compiles it into a
// thousand copies of the class, which cost 0.7 MB and 185 ms of every process start in a UML node.
var validTagRE = regexp.MustCompile(`^[a-zA-Z0-9_+.\-/=!:&#]+$`)

const maxTagLen = 1000

// ValidTag checks a tag against lvm2's tag character set and length.
func ValidTag(tag string) error {
	if len(tag) > maxTagLen || !validTagRE.MatchString(tag) {
		return fmt.Errorf("%w: invalid tag %q", ErrInvalidArgument, tag)
	}
	return nil
}

// sizeArgRE is an lvm2 size argument with an optional unit (no unit: lvm2's default for the
// option, KiB for -I).
var sizeArgRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?[bBsSkKmMgGtT]?$`)

// ValidSizeArg checks a size written for lvm2, such as "64k" for -I.
func ValidSizeArg(s string) error {
	if !sizeArgRE.MatchString(s) {
		return fmt.Errorf("%w: %q is not a size such as 64k", ErrInvalidArgument, s)
	}
	return nil
}

// CreatePVs initialises devices as PVs (`pvcreate`). Devices must have been
// checked by the device filter first. It never answers lvm2's questions with
// yes (no -y): a signature that appeared on a device after the filter's check
// makes lvm2 ask whether to wipe it, the question reads end of input, and the
// command fails with the device untouched (and so vgcreate and vgextend).
func (c *Client) CreatePVs(ctx context.Context, devices ...string) error {
	if len(devices) == 0 {
		return fmt.Errorf("create PVs: %w: no devices", ErrInvalidArgument)
	}
	for _, d := range devices {
		if err := validDevice(d); err != nil {
			return fmt.Errorf("create PVs: %w", err)
		}
	}
	if err := c.run(ctx, append([]string{"pvcreate"}, devices...)...); err != nil {
		return fmt.Errorf("create PVs on %v: %w", devices, err)
	}
	return nil
}

// RemovePV removes the PV label from an orphan PV (`pvremove`). A PV that
// still belongs to a VG is refused with ErrNotOurs.
func (c *Client) RemovePV(ctx context.Context, pv PV) error {
	if !pv.Orphan() {
		return fmt.Errorf("remove PV %s: belongs to VG %s: %w", pv.Name, pv.VGName, ErrNotOurs)
	}
	if err := validDevice(pv.Name); err != nil {
		return fmt.Errorf("remove PV: %w", err)
	}
	if err := c.run(ctx, "pvremove", "-y", pv.Name); err != nil {
		return fmt.Errorf("remove PV %s: %w", pv.Name, err)
	}
	return nil
}

// CreateVG creates VG name on devices, tagged with Tag and any extra tags
// (`vgcreate --addtag lvms`). Devices that are not PVs yet are initialised.
func (c *Client) CreateVG(ctx context.Context, name string, devices []string, tags ...string) error {
	if err := ValidName(name); err != nil {
		return fmt.Errorf("create VG: %w", err)
	}
	if len(devices) == 0 {
		return fmt.Errorf("create VG %s: %w: no devices", name, ErrInvalidArgument)
	}
	for _, d := range devices {
		if err := validDevice(d); err != nil {
			return fmt.Errorf("create VG %s: %w", name, err)
		}
	}
	ta, err := tagArgs(append(
		[]string{Tag},
		slices.DeleteFunc(c.id.with(tags), func(t string) bool { return t == Tag })...,
	))
	if err != nil {
		return fmt.Errorf("create VG %s: %w", name, err)
	}
	args := append(append([]string{"vgcreate"}, ta...), name)
	if err := c.run(ctx, append(args, devices...)...); err != nil {
		return fmt.Errorf("create VG %s on %v: %w", name, devices, err)
	}
	return nil
}
