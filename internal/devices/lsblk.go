// Package devices inventories the host's block devices, decides which of
// them may become LVM physical volumes, and wipes devices on explicit
// request.
//
// The inventory comes from lsblk, but lsblk takes filesystem types,
// partition labels and device-mapper holders from udev's database, which is
// empty or stale on many hosts. Safety therefore never rests on lsblk alone:
// every candidate is probed directly (blkid -p), its holders are read from
// sysfs and its mounts from mountinfo. The filter (Evaluate) is a list of
// named predicates; every predicate that rejects a device contributes a
// human-readable reason.
package devices

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// lsblkColumns are the columns requested from lsblk.
const lsblkColumns = "NAME,KNAME,TYPE,SIZE,RO,STATE,FSTYPE,PARTLABEL,SERIAL,MODEL,ROTA,PKNAME"

// BlockDevice is one lsblk entry. FSType and PartLabel come from udev and are
// often empty even when the device holds data; see Facts for probed values.
type BlockDevice struct {
	Name       string // e.g. /dev/sdb or /dev/mapper/vg-lv
	KName      string // kernel name, e.g. /dev/sdb or /dev/dm-0
	Type       string // disk, part, lvm, crypt, loop, rom, ...
	Size       uint64 // bytes
	ReadOnly   bool
	State      string // running, suspended, live, ...
	FSType     string
	PartLabel  string
	Serial     string
	Model      string
	Rotational bool
	PKName     string // parent kernel name, for partitions
	// ParentType is the type of the device this one is stacked on in lsblk's tree ("" at its top;
	// for a device on several parents, such as an LV on two PVs, the type of the first).
	ParentType string
	Children   []BlockDevice
}

// lsblkDevice mirrors lsblk's JSON. Field types differ between util-linux
// versions (booleans vs "0"/"1", numbers vs strings), hence the flex types.
type lsblkDevice struct {
	Name      flexString    `json:"name"`
	KName     flexString    `json:"kname"`
	Type      flexString    `json:"type"`
	Size      flexUint      `json:"size"`
	RO        flexBool      `json:"ro"`
	State     flexString    `json:"state"`
	FSType    flexString    `json:"fstype"`
	PartLabel flexString    `json:"partlabel"`
	Serial    flexString    `json:"serial"`
	Model     flexString    `json:"model"`
	Rota      flexBool      `json:"rota"`
	PKName    flexString    `json:"pkname"`
	Children  []lsblkDevice `json:"children"`
}

// ParseLsblk parses `lsblk --json --paths --bytes` output.
func ParseLsblk(data []byte) ([]BlockDevice, error) {
	var out struct {
		BlockDevices []lsblkDevice `json:"blockdevices"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("parse lsblk output: %w", err)
	}
	return convert(out.BlockDevices, 0, ""), nil
}

// maxDepth bounds recursion on hostile input; real trees are a few levels.
const maxDepth = 32

func convert(in []lsblkDevice, depth int, parentType string) []BlockDevice {
	if len(in) == 0 || depth > maxDepth {
		return nil
	}
	out := make([]BlockDevice, 0, len(in))
	for _, d := range in {
		bd := BlockDevice{
			Name: string(d.Name), KName: string(d.KName), Type: string(d.Type), Size: uint64(d.Size),
			ReadOnly: bool(d.RO), State: string(d.State), FSType: string(d.FSType),
			PartLabel: string(d.PartLabel), Serial: strings.TrimSpace(string(d.Serial)),
			Model: strings.TrimSpace(string(d.Model)), Rotational: bool(d.Rota), PKName: string(d.PKName),
			ParentType: parentType, Children: convert(d.Children, depth+1, string(d.Type)),
		}
		if bd.KName == "" {
			bd.KName = bd.Name
		}
		out = append(out, bd)
	}
	return out
}

// Flatten returns every device of the tree once (by kernel name), parents
// before children. A device-mapper device on several PVs appears under each
// of them in lsblk's tree; it is returned once.
func Flatten(devs []BlockDevice) []BlockDevice {
	seen := map[string]bool{}
	var out []BlockDevice
	var walk func([]BlockDevice)
	walk = func(ds []BlockDevice) {
		for _, d := range ds {
			if !seen[d.KName] {
				seen[d.KName] = true
				out = append(out, d)
			}
			walk(d.Children)
		}
	}
	walk(devs)
	return out
}

// LsblkArgs returns the arguments List passes to lsblk (for fakes).
func LsblkArgs() []string {
	return []string{"--json", "--paths", "--bytes", "-o", lsblkColumns}
}

// List runs lsblk and returns the device tree.
func (h *Host) List(ctx context.Context) ([]BlockDevice, error) {
	out, err := exec.Run(ctx, h.exec, "lsblk", LsblkArgs()...)
	if err != nil {
		return nil, fmt.Errorf("list block devices: %w", err)
	}
	devs, err := ParseLsblk(out)
	if err != nil {
		return nil, fmt.Errorf("list block devices: %w", err)
	}
	return devs, nil
}

type flexString string

func (s *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		*s = ""
	case len(b) > 0 && b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = flexString(v)
	default:
		*s = flexString(b) // a number or boolean printed as is
	}
	return nil
}

type flexBool bool

func (v *flexBool) UnmarshalJSON(b []byte) error {
	var s flexString
	if err := s.UnmarshalJSON(b); err != nil {
		return err
	}
	switch strings.ToLower(string(s)) {
	case "", "0", "false":
		*v = false
	case "1", "true":
		*v = true
	default:
		return fmt.Errorf("invalid boolean %q", string(s))
	}
	return nil
}

type flexUint uint64

func (v *flexUint) UnmarshalJSON(b []byte) error {
	var s flexString
	if err := s.UnmarshalJSON(b); err != nil {
		return err
	}
	if s == "" {
		*v = 0
		return nil
	}
	n, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return fmt.Errorf("invalid size %q: %w", string(s), err)
	}
	*v = flexUint(n)
	return nil
}
