package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLvmdCommandConfigErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(
		bad,
		[]byte("device-classes:\n  - name: a\n    volume-group: vg\n    type: thin\n"),
		0o600,
	); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"config is required", nil, `required flag(s) "config" not set`},
		{"missing file", []string{"--config", filepath.Join(t.TempDir(), "nope.yaml")}, "no such file"},
		{"invalid config", []string{"--config", bad}, "type thin needs thin-pool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newLvmdCommand()
			cmd.SetArgs(tt.args)
			cmd.SetOut(&strings.Builder{})
			cmd.SetErr(&strings.Builder{})
			err := cmd.Execute()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
