package lvm

import (
	"context"
	"fmt"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// ArchiveKeep is how many of lvm2's metadata archives of each VG the commands of this project
// leave in the host's archive directory (lvm.conf backup/archive_dir, /etc/lvm/archive).
//
// Before it changes a VG, lvm2 writes a copy of the VG's whole metadata there and, by default,
// keeps every copy for 30 days (backup/retain_days; backup/retain_min = 10 is only a floor). A
// CSI driver changes its VGs for every volume it creates, grows, snapshots and deletes, and each
// copy lists every LV of the VG, so the archive grows with the square of the LV count and
// churn fills the host's /etc (on 2026-11-27 a test node of 1,000 thin LVs ran out of space
// after about 1,300 changes, and every lvremove then failed with "fclose failed: No space left
// on device"; openebs/lvm-localpv#236 and canonical/lxd#19091 report the same). lvm2 also lists
// the directory on every change to expire old copies (IBM/CAST#345 saw commands slow down as it
// grew).
//
// Every lvm2 command of this project therefore runs with
// `--config 'backup { retain_min = ArchiveKeep retain_days = 0 }'`: lvm2 still archives each
// change, and then drops the archives of that VG beyond the newest ArchiveKeep. An archive off in
// lvm.conf (backup/archive = 0) stays off; the latest metadata of each VG stays in
// backup/backup_dir (/etc/lvm/backup) as before, and `vgcfgrestore --list VG` lists what is kept.
const ArchiveKeep = 10

// archiveConfig is the --config value that bounds the archive.
var archiveConfig = fmt.Sprintf("backup { retain_min = %d retain_days = 0 }", ArchiveKeep)

// CommandArgs returns the arguments of `lvm sub args...` (args[0] is the subcommand) as this
// project runs every lvm2 command: with the archive of the VG it changes bounded to ArchiveKeep
// files. Run runs `lvm` with them; use it rather than exec.Run with args alone.
func CommandArgs(args ...string) []string {
	if len(args) == 0 {
		return args
	}
	out := make([]string, 0, len(args)+2)
	out = append(out, args[0], "--config", archiveConfig)
	return append(out, args[1:]...)
}

// Run runs `lvm args...` (args[0] is the subcommand) through e with the archive bound
// (CommandArgs) and returns its standard output. A command refused because a thin pool's
// components were left active without the pool is run again after they are deactivated
// (runRepairing).
func Run(ctx context.Context, e exec.Executor, args ...string) ([]byte, error) {
	return runRepairing(ctx, e, args...)
}
