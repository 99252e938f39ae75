package exec_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

// TestMetrics: every command is counted by lvm subcommand or program and by result, and timed.
func TestMetrics(t *testing.T) {
	fake := exectest.New().
		On(exectest.OK(""), "lvm", "lvcreate", "-n", "a").
		On(exectest.Fail(5, "Insufficient free space"), "lvm", "lvcreate", "-n", "b").
		On(exectest.OK("{}"), "blkid", "-p", "/dev/sdb")
	m := exec.NewMetrics()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m.Collectors()...)
	e := m.Instrument(fake)
	ctx := t.Context()
	_, _ = exec.Run(ctx, e, "lvm", "lvcreate", "-n", "a")
	_, _ = exec.Run(ctx, e, "lvm", "lvcreate", "-n", "b")
	_, _ = exec.Run(ctx, e, "blkid", "-p", "/dev/sdb")
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = exec.Run(canceled, e, "wipefs", "/dev/sdc")
	timeout := exec.NewHost(exec.WithTimeout(50 * time.Millisecond))
	_, _ = exec.Run(ctx, m.Instrument(timeout), "sleep", "5")

	want := `
# HELP lvms_host_commands_total Host commands (lvm2 subcommands, blkid, wipefs, mkfs, mount, ...) run, by command and result.
# TYPE lvms_host_commands_total counter
lvms_host_commands_total{command="blkid",result="ok"} 1
lvms_host_commands_total{command="lvcreate",result="failed"} 1
lvms_host_commands_total{command="lvcreate",result="ok"} 1
lvms_host_commands_total{command="sleep",result="timeout"} 1
lvms_host_commands_total{command="wipefs",result="aborted"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), exec.MetricCommandsTotal); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.Collectors()[1], exec.MetricCommandDuration); n != 5 {
		t.Errorf("%d duration series, want one per command and result (5)", n)
	}
}
