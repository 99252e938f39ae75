package main

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args        []string
		wantTTY     string
		wantForward map[string]string
		wantAllow   []string
		wantErr     string
	}{
		{name: "defaults", wantTTY: "/dev/ttyS1", wantForward: map[string]string{}},
		{
			name: "forwards and allows",
			args: []string{"-tty", "/dev/ttyS2", "-forward", "127.0.0.1:6443=127.0.0.1:36443",
				"-forward", "127.0.0.1:8080=127.0.0.1:80", "-allow", "127.0.0.1:9808"},
			wantTTY:     "/dev/ttyS2",
			wantForward: map[string]string{"127.0.0.1:6443": "127.0.0.1:36443", "127.0.0.1:8080": "127.0.0.1:80"},
			wantAllow:   []string{"127.0.0.1:9808"},
		},
		{name: "forward without target", args: []string{"-forward", "127.0.0.1:6443"}, wantErr: "want LISTEN=TARGET"},
		{name: "stray argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.tty != tc.wantTTY || !maps.Equal(c.opts.Forward, tc.wantForward) ||
				!slices.Equal(c.opts.Allow, tc.wantAllow) {
				t.Errorf("got tty %q forward %v allow %v", c.tty, c.opts.Forward, c.opts.Allow)
			}
		})
	}
}
