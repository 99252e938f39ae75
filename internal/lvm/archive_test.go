package lvm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
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

// The one --config of a command: a change carries the archive bound and the client's
// configuration together, a read the configuration alone (nothing when it is ""); a failure to
// produce the configuration runs nothing. WithIdentity keeps the configuration.
func TestWithConfig(t *testing.T) {
	filter := `devices { global_filter = [ "r|^/dev/loop0$|" ] }`
	config := filter
	var errConfig error
	f := exectest.New()
	f.Handler = func(exectest.Call) exectest.Response { return exectest.OK("") }
	c := New(f).WithConfig(func(context.Context) (string, error) { return config, errConfig }).
		WithIdentity(Identity{Node: "a"})
	ctx := t.Context()
	if err := c.RemoveLV(ctx, ours, "lv"); err != nil {
		t.Fatal(err)
	}
	if err := c.Read(ctx, nil, "lvs", "vg1"); err != nil {
		t.Fatal(err)
	}
	config = ""
	if err := c.Read(ctx, nil, "lvs", "vg1"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		exec.CommandLine("lvm", []string{"lvremove", "--config", archiveConfig + " " + filter, "-y", "vg1/lv"}),
		exec.CommandLine("lvm", []string{"lvs", "--config", filter, "vg1"}),
		exec.CommandLine("lvm", []string{"lvs", "vg1"}),
	}
	if d := exectest.Diff(f, want...); d != "" {
		t.Error(d)
	}
	errConfig = errors.New("lvmconfig failed")
	if err := c.RemoveLV(ctx, ours, "lv"); !errors.Is(err, errConfig) {
		t.Errorf("RemoveLV with a failing configuration: %v", err)
	}
	if err := c.Read(ctx, nil, "lvs"); !errors.Is(err, errConfig) {
		t.Errorf("Read with a failing configuration: %v", err)
	}
	if n := len(f.Calls()); n != 3 {
		t.Errorf("%d commands ran, want the 3 before the configuration failed: %q", n, f.Lines())
	}
}
