package lvm

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

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

// CommandArgs returns the arguments of `lvm sub args...` (args[0] is the subcommand) as the
// Client runs a command that changes a VG: with the archive of the VG bounded to ArchiveKeep
// files (and the client's configuration, Client.WithConfig, beside it).
func CommandArgs(args ...string) []string { return withConfig(args, archiveConfig) }

// ConfigFunc returns lvm2 configuration for the next command, such as a devices section with a
// filter, or "" for none. It is asked before every command.
type ConfigFunc func(ctx context.Context) (string, error)

// WithConfig returns a client that runs every command with the configuration f returns, in the
// one --config beside the archive bound.
func (c *Client) WithConfig(f ConfigFunc) *Client {
	return &Client{exec: c.exec, id: c.id, config: f}
}

// commandArgs is the one place the --config of a command is written: for a change (a command
// that may change a VG) the archive bound, and for every command the client's configuration.
func (c *Client) commandArgs(ctx context.Context, change bool, args ...string) ([]string, error) {
	var sections []string
	if change {
		sections = append(sections, archiveConfig)
	}
	if c.config != nil {
		extra, err := c.config(ctx)
		if err != nil {
			return nil, fmt.Errorf("lvm2 configuration of %q: %w", args, err)
		}
		if extra != "" {
			sections = append(sections, extra)
		}
	}
	return withConfig(args, sections...), nil
}

// withConfig puts --config with sections after the subcommand args[0].
func withConfig(args []string, sections ...string) []string {
	if len(args) == 0 || len(sections) == 0 {
		return args
	}
	return slices.Concat(args[:1], []string{"--config", strings.Join(sections, " ")}, args[1:])
}

// Read runs the read-only `lvm args...` (args[0] is the subcommand) with the client's
// configuration; stdout, if not nil, reads its standard output. Failures are classified.
func (c *Client) Read(ctx context.Context, stdout func(io.Reader) error, args ...string) error {
	full, err := c.commandArgs(ctx, false, args...)
	if err != nil {
		return err
	}
	return classify(c.exec.Exec(ctx, exec.Cmd{Name: Command, Args: full, Stdout: stdout}))
}
