package main

import (
	"testing"

	"github.com/spf13/cobra"
)

// Both controller-runtime binaries take controller-runtime's zap flags, as LVMS's and TopoLVM's
// do, and the operator learns the level it passes on to the node agents.
func TestLogFlags(t *testing.T) {
	for _, tc := range []struct {
		cmd  func() *cobra.Command
		args []string
		want string
	}{
		{newOperatorCommand, nil, ""},
		{newOperatorCommand, []string{"--zap-log-level=debug", "--zap-devel"}, "debug"},
		{newNodeCommand, []string{"--zap-log-level", "2", "--zap-encoder=console", "--zap-time-encoding=iso8601"}, "2"},
	} {
		cmd := tc.cmd()
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatalf("%s %q: %v", cmd.Name(), tc.args, err)
		}
		if got := logLevel(cmd.Flags()); got != tc.want {
			t.Errorf("%s %q: log level %q, want %q", cmd.Name(), tc.args, got, tc.want)
		}
	}
	if err := newNodeCommand().ParseFlags([]string{"--zap-log-level=loud"}); err == nil {
		t.Error("--zap-log-level=loud was accepted")
	}
}
