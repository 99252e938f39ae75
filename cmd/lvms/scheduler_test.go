package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/lvm-operator/lvm-operator/internal/scheduler"
)

func writeSchedulerConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scheduler-options.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSchedulerConfigListen checks where the listen address comes from: the --listen flag when
// given, else the file's listen, else the default.
func TestSchedulerConfigListen(t *testing.T) {
	withListen := writeSchedulerConfig(t, "listen: 127.0.0.1:7000\ndivisors: {ssd: 2}\n")
	withoutListen := writeSchedulerConfig(t, "default-divisor: 3\n")
	tests := []struct {
		name      string
		path      string
		flag      string
		flagSet   bool
		want      string
		wantDivSS float64
	}{
		{"no file", "", scheduler.DefaultListen, false, scheduler.DefaultListen, 0},
		{"file sets listen", withListen, scheduler.DefaultListen, false, "127.0.0.1:7000", 2},
		{"flag beats file", withListen, ":9999", true, ":9999", 2},
		{"file without listen", withoutListen, scheduler.DefaultListen, false, scheduler.DefaultListen, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := schedulerConfig(logr.Discard(), tt.path, tt.flag, tt.flagSet)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Listen != tt.want || cfg.Divisors["ssd"] != tt.wantDivSS {
				t.Errorf("listen %q divisors %v, want %q and ssd %v", cfg.Listen, cfg.Divisors, tt.want, tt.wantDivSS)
			}
		})
	}
}

func TestSchedulerCommandConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"missing file", []string{"--config", filepath.Join(t.TempDir(), "nope.yaml")}, "no such file"},
		{"bad divisor", []string{"--config", writeSchedulerConfig(t, "default-divisor: 0\n")}, "default-divisor 0"},
		{"bad address", []string{"--listen", "not-an-address"}, "listen on not-an-address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := newSchedulerCommand()
			cmd.SetArgs(tt.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestServeSchedulerStopsOnCancel serves the extender on a real socket, answers a status probe
// and a filter request, and returns nil soon after its context ends.
func TestServeSchedulerStopsOnCancel(t *testing.T) {
	h, err := scheduler.NewHandler(scheduler.DefaultConfig(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- serveScheduler(ctx, ln, h) }()
	base := "http://" + ln.Addr().String()
	for _, r := range []struct{ method, path, body, want string }{
		{http.MethodGet, "/status", "", "ok"},
		{http.MethodPost, "/predicate", `{"Pod":{},"Nodes":{"items":[{"metadata":{"name":"a"}}]}}`, `"name":"a"`},
	} {
		req, err := http.NewRequestWithContext(t.Context(), r.method, base+r.path, strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), r.want) {
			t.Fatalf("%s %s: %d %q (%v), want %q", r.method, r.path, resp.StatusCode, body, err, r.want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serveScheduler returned %v after cancel", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serveScheduler did not return after cancel")
	}
}
