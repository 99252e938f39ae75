package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, out string)
	}{
		{
			name: "text",
			args: []string{"version"},
			check: func(t *testing.T, out string) {
				for _, want := range []string{"Version:", "Git commit:", "Go version: " + runtime.Version()} {
					if !strings.Contains(out, want) {
						t.Errorf("output %q lacks %q", out, want)
					}
				}
			},
		},
		{
			name: "json",
			args: []string{"version", "--json"},
			check: func(t *testing.T, out string) {
				var got map[string]string
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, out)
				}
				if got["goVersion"] != runtime.Version() || got["version"] == "" || got["gitCommit"] == "" {
					t.Errorf("unexpected fields: %v", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newRootCommand()
			var buf bytes.Buffer
			root.SetOut(&buf)
			root.SetArgs(tt.args)
			if err := root.Execute(); err != nil {
				t.Fatalf("execute: %v", err)
			}
			tt.check(t, buf.String())
		})
	}
}
