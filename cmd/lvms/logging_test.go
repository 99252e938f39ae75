package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
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

// Log lines carry timestamps below the second unless --zap-time-encoding says otherwise.
func TestLogTimestamps(t *testing.T) {
	for args, want := range map[string]*regexp.Regexp{
		"":                            regexp.MustCompile(`"ts":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z"`),
		"--zap-time-encoding=epoch":   regexp.MustCompile(`"ts":\d+\.\d+,`),
		"--zap-time-encoding=rfc3339": regexp.MustCompile(`"ts":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"`),
	} {
		fl := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o := addLogFlags(fl)
		if err := fl.Parse(strings.Fields(args)); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		o.DestWriter = &buf
		zap.New(zap.UseFlagOptions(o)).Info("hello")
		if !want.MatchString(buf.String()) {
			t.Errorf("flags %q logged %s, want a ts matching %s", args, buf.String(), want)
		}
	}
}
