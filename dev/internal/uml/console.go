package uml

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Console markers printed by hack/uml/guest-init.sh, each on a line of its own.
const (
	markerStart       = "GUEST-START"
	markerExit        = "GUEST-EXIT="
	markerSetupFailed = "GUEST-SETUP-FAILED:"
)

// console consumes the guest console: it keeps a copy, forwards lines to an optional writer and
// records the markers with the time they were seen. Safe for one writer and concurrent readers.
type console struct {
	now     func() time.Time
	forward io.Writer // may be nil
	// showBoot forwards the lines before GUEST-START too (kernel and init messages).
	showBoot bool

	mu          sync.Mutex
	partial     []byte
	all         bytes.Buffer
	started     time.Time // when GUEST-START was seen; zero before
	exited      time.Time // when GUEST-EXIT was seen; zero before
	exitCode    int
	setupFailed string
	exitSeen    chan struct{} // closed on the first GUEST-EXIT
}

func newConsole(forward io.Writer, showBoot bool, now func() time.Time) *console {
	return &console{now: now, forward: forward, showBoot: showBoot, exitSeen: make(chan struct{})}
}

// Write implements io.Writer; it never fails so the guest is never blocked on the console.
func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.line(c.partial[:i])
		c.partial = c.partial[i+1:]
	}
	return len(p), nil
}

// flush handles a last line that lacks its newline.
func (c *console) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.partial) > 0 {
		c.line(c.partial)
		c.partial = nil
	}
}

// line handles one console line (without "\n"); c.mu is held.
func (c *console) line(raw []byte) {
	l := bytes.TrimRight(raw, "\r")
	c.all.Write(l)
	c.all.WriteByte('\n')
	forward := c.showBoot || !c.started.IsZero()
	s := string(l)
	switch {
	case s == markerStart && c.started.IsZero():
		c.started = c.now()
		forward = true
	case strings.HasPrefix(s, markerExit):
		if rc, ok := parseExitMarker(s); ok {
			if c.exited.IsZero() {
				close(c.exitSeen)
			}
			// The last marker wins: the command's own output could mimic one.
			c.exited, c.exitCode = c.now(), rc
		}
	case strings.HasPrefix(s, markerSetupFailed):
		c.setupFailed = strings.TrimSpace(strings.TrimPrefix(s, markerSetupFailed))
		forward = true
	}
	if forward && c.forward != nil {
		_, _ = c.forward.Write(append(bytes.Clone(l), '\n')) // a failing forward writer must not stop the guest
	}
}

// parseExitMarker parses "GUEST-EXIT=<rc>".
func parseExitMarker(s string) (int, bool) {
	v, ok := strings.CutPrefix(strings.TrimSpace(s), markerExit)
	if !ok {
		return 0, false
	}
	rc, err := strconv.Atoi(v)
	if err != nil || rc < 0 || rc > 255 {
		return 0, false
	}
	return rc, true
}

// consoleState is a snapshot of what the console saw.
type consoleState struct {
	output      []byte
	started     time.Time
	exited      time.Time
	exitCode    int
	setupFailed string
}

func (c *console) state() consoleState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return consoleState{
		output:      bytes.Clone(c.all.Bytes()),
		started:     c.started,
		exited:      c.exited,
		exitCode:    c.exitCode,
		setupFailed: c.setupFailed,
	}
}

// tail returns the last n lines of out, for error messages.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
