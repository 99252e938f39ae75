package lvm

import (
	"slices"
	"strings"
	"testing"
)

// bounded is the command line `lvm SUB ARGS` as the client runs it: with the archive bound after
// the subcommand.
func bounded(cmdline string) string {
	prog, rest, _ := strings.Cut(cmdline, " ")
	sub, args, _ := strings.Cut(rest, " ")
	return strings.TrimSpace(prog + " " + sub + ` --config "` + archiveConfig + `" ` + args)
}

func TestCommandArgs(t *testing.T) {
	got := CommandArgs("lvremove", "-y", "vg/a")
	want := []string{"lvremove", "--config", "backup { retain_min = 10 retain_days = 0 }", "-y", "vg/a"}
	if !slices.Equal(got, want) {
		t.Errorf("CommandArgs = %q, want %q", got, want)
	}
	if got := CommandArgs(); len(got) != 0 {
		t.Errorf("CommandArgs() = %q", got)
	}
}
