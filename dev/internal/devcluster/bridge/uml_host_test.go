//go:build !guest

package bridge

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/lvm-operator/lvm-operator/dev/internal/uml"
)

// requireUML skips unless LVMS_UML_TESTS=1 (hack/test-lvm.sh sets it) and fails when the UML
// kernel is missing.
func requireUML(t *testing.T) {
	t.Helper()
	if os.Getenv("LVMS_UML_TESTS") != "1" {
		t.Skip("boots a User-mode Linux guest; set LVMS_UML_TESTS=1 (hack/test-lvm.sh does)")
	}
	if _, err := exec.LookPath("linux.uml"); err != nil {
		t.Fatalf("linux.uml not installed; run hack/uml-deps.sh: %v", err)
	}
}

// buildStatic builds the command in ./<pkg> as a static binary into dir.
func buildStatic(t *testing.T, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, "./"+pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// hostProbeServer runs "bridgeprobe serve" on the host and returns its address.
func hostProbeServer(t *testing.T, probe string) string {
	t.Helper()
	cmd := exec.Command(probe, "serve", "-listen", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("probe server: %q, %v", line, err)
	}
	return addr
}

var probeLine = regexp.MustCompile(`PROBE first=\S+ conn_median=\S+ conn_max=\S+ down_MBps=\S+ up_MBps=\S+`)

// guestScript starts guestbridge and a probe server in the guest, measures the host's probe
// server through the bridge, and exits once the host has asked the guest's server to quit.
const guestScript = `
"$BIN/guestbridge" -v "${VERBOSE:-0}" -line-window "${LINE_WINDOW:-0}" -tty /dev/ttyS1 -forward "127.0.0.1:18080=$HOST_PROBE" &
bridge=$!
"$BIN/bridgeprobe" serve -listen 127.0.0.1:18081 -timeout 5m &
serve=$!
"$BIN/bridgeprobe" get -url http://127.0.0.1:18080 -n 20 -size $SIZE -wait 2m -timeout $LIMIT
rc=$?
[ $rc = 0 ] || kill -QUIT $bridge # goroutine dump on the console
wait $serve || rc=1
exit $rc
`

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// probeSize is the bulk transfer size, BRIDGE_PROBE_SIZE or 1 MiB (plain yamux stalled after
// a few hundred KB).
func probeSize() string { return envOr("BRIDGE_PROBE_SIZE", "1048576") }

// verbosity is BRIDGE_VERBOSE as a number (1 logs every connection on both sides).
func verbosity() int {
	v, _ := strconv.Atoi(os.Getenv("BRIDGE_VERBOSE"))
	return v
}

// lineWindow is BRIDGE_LINE_WINDOW as a number, for both sides (0: DefaultLineWindow).
func lineWindow() int {
	v, _ := strconv.Atoi(os.Getenv("BRIDGE_LINE_WINDOW"))
	return v
}

// TestUMLBridge boots a guest with the bridge on /dev/ttyS1 and fetches over HTTP both ways: the
// guest from a host server on 127.0.0.1, the host from a guest server, logging the first
// answer's latency, the per-connection latency and the throughput each way.
//
// Without the credit layer beneath yamux (see the package doc) this stalled after a few hundred
// KB: UML stopped delivering host→guest bytes once the guest tty's buffers had filled up.
// BRIDGE_LINE_WINDOW sets the line window of both sides, BRIDGE_PROBE_SIZE the transfer size.
func TestUMLBridge(t *testing.T) {
	requireUML(t)
	bin := t.TempDir() // under /tmp, which the guest sees at the same path
	buildStatic(t, bin, "guestbridge")
	probe := buildStatic(t, bin, "bridgeprobe")
	hostProbe := hostProbeServer(t, probe)
	hostEnd, guestEnd, err := uml.NewSerialLine("bridge")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = guestEnd.Close() }()

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	type runResult struct {
		res *uml.Result
		err error
	}
	done := make(chan runResult, 1)
	launch := time.Now()
	// The handshake gives up when the guest ends without ever starting the bridge.
	hsCtx, hsCancel := context.WithCancel(ctx)
	defer hsCancel()
	go func() {
		defer hsCancel()
		res, err := uml.Run(ctx, uml.Options{
			Command: []string{"/bin/sh", "-c", guestScript},
			Env: map[string]string{
				"BIN":         bin,
				"HOST_PROBE":  hostProbe,
				"VERBOSE":     os.Getenv("BRIDGE_VERBOSE"),
				"SIZE":        probeSize(),
				"LINE_WINDOW": strconv.Itoa(lineWindow()),
				"LIMIT":       envOr("BRIDGE_PROBE_LIMIT", "3m"),
			},
			SerialLines: []uml.SerialLine{{Index: 1, File: guestEnd}},
			MemoryMiB:   256,
			Timeout:     7 * time.Minute,
		})
		done <- runResult{res, err}
	}()

	logger := testr.NewWithOptions(t, testr.Options{Verbosity: verbosity(), LogTimestamp: true})
	h, err := Host(hsCtx, hostEnd, Options{Allow: []string{hostProbe}, Log: logger, LineWindow: lineWindow()})
	if err != nil {
		r := <-done
		var output []byte
		if r.res != nil {
			output = r.res.Output
		}
		t.Fatalf("bridge handshake: %v (guest: %v)\n%s", err, r.err, output)
	}
	defer h.Close()
	t.Logf("bridge up %s after launch", time.Since(launch).Round(time.Millisecond))
	exposed, err := h.Expose("127.0.0.1:0", 18081)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, probe, "get", "-url", "http://"+exposed.String(),
		"-n", "20", "-size", probeSize(), "-wait", "2m", "-timeout", envOr("BRIDGE_PROBE_LIMIT", "3m")).CombinedOutput()
	t.Logf(
		"host → guest: first answer %s after launch; %s",
		time.Since(launch).Round(time.Millisecond),
		bytes.TrimSpace(out),
	)
	if err != nil || !probeLine.Match(out) {
		t.Errorf("host → guest probe: %v\n%s", err, out)
		buf := make([]byte, 1<<20)
		t.Logf("host goroutines:\n%s", buf[:runtime.Stack(buf, true)])
	}
	quit, err := get(ctx, func(ctx context.Context, _, _ string) (net.Conn, error) {
		return h.DialGuest(ctx, 18081)
	}, "http://guest/quit")
	if err != nil || quit != "bye\n" {
		t.Errorf("GET /quit through DialGuest: %q, %v", quit, err)
	}

	r := <-done
	_ = guestEnd.Close() // UML had the only other copy: the host side now sees the line end
	if r.err != nil {
		t.Fatalf("guest: %v\n%s", r.err, r.res.Output)
	}
	guestProbe := probeLine.Find(r.res.Output)
	t.Logf("guest → host: %s (boot %s, command %s)", guestProbe, r.res.Boot, r.res.Command)
	if r.res.ExitCode != 0 || guestProbe == nil {
		t.Errorf("guest exit %d, output:\n%s", r.res.ExitCode, r.res.Output)
	}
	select {
	case <-h.Done():
		if err := h.Wait(); err == nil || !strings.Contains(err.Error(), "bridge line ended") {
			t.Errorf("host side after the guest ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("host side did not notice the guest ending")
	}
}
