package lvm

import (
	"strings"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

func TestRunRepairsAPoolLeftHalfActivated(t *testing.T) {
	raw := []string{"lvcreate", "-y", "--type", "thin", "-V", "1073741824b", "--thinpool", "pool", "-n", "a", "vg"}
	create := CommandArgs(raw...)
	deactivate := CommandArgs("lvchange", "-an", "vg/pool_tdata", "vg/pool_tmeta")
	repaired := []string{exec.CommandLine("lvm", create), exec.CommandLine("lvm", deactivate),
		exec.CommandLine("lvm", create)}
	refusal := func(comp string) exectest.Response {
		return exectest.Fail(5, "  Activation of logical volume vg/pool is prohibited while logical volume vg/"+comp+
			" is active.\n  Aborting. Failed to locally activate thin pool vg/pool.\n")
	}
	tests := []struct {
		name       string
		first      exectest.Response
		deactivate exectest.Response
		want       []string
		wantErr    string
	}{
		{
			"tmeta left active",
			refusal("pool_tmeta"),
			exectest.OK(""),
			repaired,
			"",
		},
		{
			"tdata left active",
			refusal("pool_tdata"),
			exectest.OK(""),
			repaired,
			"",
		},
		{
			"another LV's component is not touched",
			exectest.Fail(
				5,
				"  Activation of logical volume vg/pool is prohibited while logical volume vg/other_tmeta is active.",
			),
			exectest.OK(""),
			[]string{exec.CommandLine("lvm", create)},
			"other_tmeta",
		},
		{
			"another VG's LV is not touched",
			exectest.Fail(
				5,
				"  Activation of logical volume vg/pool is prohibited while logical volume vg2/pool_tmeta is active.",
			),
			exectest.OK(""),
			[]string{exec.CommandLine("lvm", create)},
			"vg2/pool_tmeta",
		},
		{"components in use: no second try", refusal("pool_tmeta"),
			exectest.Fail(5, "  Device vg-pool_tmeta (254:0) is used by another device."),
			[]string{exec.CommandLine("lvm", create), exec.CommandLine("lvm", deactivate)}, "used by another device"},
		{"other failures as they are", exectest.Fail(5, "  Insufficient free space"), exectest.OK(""),
			[]string{exec.CommandLine("lvm", create)}, "Insufficient free space"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := exectest.New().On(tt.first, "lvm", create...).On(exectest.OK(""), "lvm", create...).
				On(tt.deactivate, "lvm", deactivate...)
			_, err := New(f).runRepairing(t.Context(), raw...)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
			if d := exectest.Diff(f, tt.want...); d != "" {
				t.Error(d)
			}
		})
	}
}
