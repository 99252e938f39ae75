package exec_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

func TestHostRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantOut    string
		wantCode   int // -2: no error expected
		wantStderr string
	}{
		{name: "stdout", args: []string{"-c", "echo hello"}, wantOut: "hello\n", wantCode: -2},
		{name: "locale is C", args: []string{"-c", `echo "$LC_ALL"`}, wantOut: "C\n", wantCode: -2},
		{name: "path is set", args: []string{"-c", `echo "$PATH"`}, wantOut: exec.DefaultPath + "\n", wantCode: -2},
		{name: "stdin", args: []string{"-c", "cat"}, stdin: "fed", wantOut: "fed", wantCode: -2},
		{
			name:       "exit code and stderr",
			args:       []string{"-c", "echo out; echo oops >&2; exit 5"},
			wantOut:    "out\n",
			wantCode:   5,
			wantStderr: "oops\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := exec.NewHost()
			var (
				out []byte
				err error
			)
			if tt.stdin != "" {
				out, err = exec.RunStdin(t.Context(), h, strings.NewReader(tt.stdin), "sh", tt.args...)
			} else {
				out, err = exec.Run(t.Context(), h, "sh", tt.args...)
			}
			if string(out) != tt.wantOut {
				t.Errorf("stdout = %q, want %q", out, tt.wantOut)
			}
			if tt.wantCode == -2 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			e, ok := exec.AsError(err)
			if !ok {
				t.Fatalf("error %v is not *exec.Error", err)
			}
			if e.ExitCode != tt.wantCode || e.Stderr != tt.wantStderr || e.Cmd != "sh" {
				t.Errorf("got %+v, want exit %d stderr %q", e, tt.wantCode, tt.wantStderr)
			}
			if !exec.HasExitCode(err, tt.wantCode) || !exec.StderrContains(err, "OOPS") {
				t.Errorf("classification helpers disagree with %v", err)
			}
			if !strings.Contains(err.Error(), "exit status 5: oops") {
				t.Errorf("error message %q lacks exit status and stderr", err)
			}
		})
	}
}

func TestHostPrefixAndEnv(t *testing.T) {
	h := exec.NewHost(exec.WithPrefix("env", "PREFIXED=yes"), exec.WithEnv("EXTRA=1"))
	out, err := exec.Run(t.Context(), h, "sh", "-c", `echo "$PREFIXED $EXTRA"`)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "yes 1\n" {
		t.Errorf("got %q", out)
	}
	// The counter counts the command, not the prefix.
	if got := h.Counter().Count("sh"); got != 1 {
		t.Errorf("sh count = %d, want 1", got)
	}
	if got := h.Counter().Count("env"); got != 0 {
		t.Errorf("env count = %d, want 0", got)
	}
}

func TestRunJSONStreamsAndDrains(t *testing.T) {
	// The decoder stops after the first value; the rest (1 MiB) must be
	// drained or the command would block on a full pipe.
	h := exec.NewHost()
	var v struct{ A int }
	err := exec.RunJSON(t.Context(), h, &v, "sh", "-c", `echo '{"A": 7}'; head -c 1048576 /dev/zero`)
	if err != nil {
		t.Fatal(err)
	}
	if v.A != 7 {
		t.Errorf("A = %d", v.A)
	}
}

func TestRunJSONErrors(t *testing.T) {
	h := exec.NewHost()
	var v map[string]any
	err := exec.RunJSON(t.Context(), h, &v, "sh", "-c", `echo 'not json'`)
	if err == nil || !strings.Contains(err.Error(), "decode JSON") {
		t.Errorf("bad JSON: got %v", err)
	}
	if _, ok := exec.AsError(err); ok {
		t.Errorf("decode error must not be an *exec.Error: %v", err)
	}
	// A failing command wins over the decode error: its stderr explains.
	err = exec.RunJSON(t.Context(), h, &v, "sh", "-c", `echo broken >&2; exit 3`)
	if !exec.HasExitCode(err, 3) {
		t.Errorf("failing command: got %v", err)
	}
}

func TestProgramNotFound(t *testing.T) {
	h := exec.NewHost()
	_, err := exec.Run(t.Context(), h, "definitely-not-a-program-lvms")
	if !exec.IsProgramNotFound(err) {
		t.Errorf("got %v, want program-not-found", err)
	}
	if exec.ExitCode(err) != -1 {
		t.Errorf("exit code = %d, want -1", exec.ExitCode(err))
	}
	_, err = exec.Run(t.Context(), h, "sh", "-c", "exit 127")
	if !exec.IsProgramNotFound(err) {
		t.Errorf("exit 127: got %v, want program-not-found", err)
	}
}

func TestContextCancel(t *testing.T) {
	h := exec.NewHost()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := exec.Run(ctx, h, "sleep", "10")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want deadline exceeded", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("cancel took %v", time.Since(start))
	}
}

func TestStderrIsBounded(t *testing.T) {
	h := exec.NewHost()
	_, err := exec.Run(t.Context(), h, "sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x >&2; exit 1")
	e, ok := exec.AsError(err)
	if !ok {
		t.Fatalf("got %v", err)
	}
	if len(e.Stderr) > 70<<10 || !strings.HasSuffix(e.Stderr, "[stderr truncated]") {
		t.Errorf("stderr length %d not bounded/marked", len(e.Stderr))
	}
}

func TestCounterConcurrent(t *testing.T) {
	c := exec.NewCounter()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				c.Add("lvm")
			}
		})
	}
	wg.Wait()
	if got := c.Count("lvm"); got != 800 {
		t.Errorf("count = %d", got)
	}
	if old := c.Reset(); old["lvm"] != 800 {
		t.Errorf("reset returned %v", old)
	}
	if got := c.Count("lvm"); got != 0 {
		t.Errorf("after reset count = %d", got)
	}
	var nilCounter *exec.Counter
	nilCounter.Add("x")
	if nilCounter.Count("x") != 0 {
		t.Error("nil counter counted")
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"lvs", "-o", "lv_name"}, "lvm lvs -o lv_name"},
		{
			[]string{"--config", "devices { filter = [ \"a|.*|\" ] }"},
			`lvm --config "devices { filter = [ \"a|.*|\" ] }"`,
		},
		{[]string{""}, `lvm ""`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := exec.CommandLine("lvm", tt.args); got != tt.want {
				t.Errorf("got %s", got)
			}
		})
	}
}

func TestFake(t *testing.T) {
	f := exectest.New().
		On(exectest.OK(`{"A":1}`), "lvm", "lvs").
		On(exectest.OK(`{"A":2}`), "lvm", "lvs").
		On(exectest.Fail(5, `  Volume group "x" not found`), "lvm", "vgs", "x")
	f.Handler = func(c exectest.Call) exectest.Response {
		return exectest.OK("handled " + c.Stdin)
	}
	ctx := t.Context()
	var v struct{ A int }
	for _, want := range []int{1, 2, 2} {
		if err := exec.RunJSON(ctx, f, &v, "lvm", "lvs"); err != nil || v.A != want {
			t.Fatalf("got %d, %v, want %d", v.A, err, want)
		}
	}
	_, err := exec.Run(ctx, f, "lvm", "vgs", "x")
	if !exec.HasExitCode(err, 5) || !exec.StderrContains(err, "not found") {
		t.Errorf("scripted failure: got %v", err)
	}
	out, err := exec.RunStdin(ctx, f, strings.NewReader("in"), "sfdisk", "/dev/x")
	if err != nil || string(out) != "handled in" {
		t.Errorf("handler: %q %v", out, err)
	}
	if f.Count("lvm") != 4 {
		t.Errorf("lvm count = %d", f.Count("lvm"))
	}
	if d := exectest.Diff(f, "lvm lvs", "lvm lvs", "lvm lvs", "lvm vgs x", "sfdisk /dev/x"); d != "" {
		t.Error(d)
	}
	f.Handler = nil
	if err := f.Exec(
		ctx,
		exec.Cmd{Name: "rm", Args: []string{"-rf", "/"}, Stdout: func(io.Reader) error { return nil }},
	); err == nil {
		t.Error("unscripted command succeeded")
	}
}
