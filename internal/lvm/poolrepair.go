package lvm

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// leftoverRE is lvm2's refusal to activate a thin pool whose data or metadata LV is active on its
// own: "Activation of logical volume vg/pool is prohibited while logical volume vg/pool_tmeta is
// active."
var leftoverRE = regexp.MustCompile(
	`Activation of logical volume ([^/\s]+)/(\S+) is prohibited while logical volume ([^/\s]+)/(\S+) is active`)

// leftoverComponents returns the data and metadata LVs of the thin pool that err says are active
// without their pool ("vg/pool_tdata", "vg/pool_tmeta"), or nil when err is not that refusal.
//
// An lvcreate killed while it activated the pool (the node agent killed mid-provisioning; found
// by e2e TestAgentRestartMidProvisioning on 2026-11-27) leaves the pool's _tmeta and _tdata active
// and the pool itself not. lvm2 then refuses every later activation of the pool, so every lvcreate
// of a thin LV in it fails until they are deactivated.
func leftoverComponents(err error) []string {
	e, ok := exec.AsError(err)
	if !ok {
		return nil
	}
	m := leftoverRE.FindStringSubmatch(e.Stderr)
	if m == nil || m[1] != m[3] || (m[4] != m[2]+"_tmeta" && m[4] != m[2]+"_tdata") {
		return nil
	}
	return []string{m[1] + "/" + m[2] + "_tdata", m[1] + "/" + m[2] + "_tmeta"}
}

// runRepairing runs `lvm args...`; when lvm2 refuses because a thin pool's components were left
// active without it (leftoverComponents), it deactivates them (`lvchange -an`, which lvm2 refuses
// while anything holds them open) and runs the command once more.
func (c *Client) runRepairing(ctx context.Context, args ...string) ([]byte, error) {
	lvm := func(args ...string) ([]byte, error) {
		full, err := c.commandArgs(ctx, true, args...)
		if err != nil {
			return nil, err
		}
		return exec.Run(ctx, c.exec, Command, full...)
	}
	out, err := lvm(args...)
	comps := leftoverComponents(err)
	if comps == nil {
		return out, err
	}
	if _, derr := lvm(append([]string{"lvchange", "-an"}, comps...)...); derr != nil {
		return out, errors.Join(err, fmt.Errorf("deactivate the thin pool's components left active: %w", derr))
	}
	return lvm(args...)
}
