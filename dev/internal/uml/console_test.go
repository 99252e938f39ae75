package uml

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestParseExitMarker(t *testing.T) {
	tests := []struct {
		in   string
		rc   int
		okay bool
	}{
		{"GUEST-EXIT=0", 0, true},
		{"GUEST-EXIT=3", 3, true},
		{"GUEST-EXIT=255 ", 255, true},
		{"GUEST-EXIT=256", 0, false},
		{"GUEST-EXIT=-1", 0, false},
		{"GUEST-EXIT=", 0, false},
		{"GUEST-EXIT=x", 0, false},
		{"echo GUEST-EXIT=1", 0, false},
	}
	for _, tc := range tests {
		rc, ok := parseExitMarker(tc.in)
		if rc != tc.rc || ok != tc.okay {
			t.Errorf("parseExitMarker(%q) = %d, %v; want %d, %v", tc.in, rc, ok, tc.rc, tc.okay)
		}
	}
}

// fakeClock advances one second per call.
func fakeClock() func() time.Time {
	t := time.Unix(1000, 0)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func TestConsoleMarkersAndForwarding(t *testing.T) {
	var fwd bytes.Buffer
	c := newConsole(&fwd, false, fakeClock())
	// Split writes at awkward places, with the tty's "\r\n" line ends.
	stream := "Linux version 6.1\r\nboot noise\r\nGUEST-START\r\nhello\r\nGUEST-EXIT=1 is a lie\r\n" +
		"GUEST-EXIT=7\r\nGUEST-EXIT=3\r\nreboot: System halted"
	for len(stream) > 0 {
		n := min(5, len(stream))
		if _, err := c.Write([]byte(stream[:n])); err != nil {
			t.Fatal(err)
		}
		stream = stream[n:]
	}
	select {
	case <-c.exitSeen:
	default:
		t.Fatal("exitSeen not closed after GUEST-EXIT")
	}
	c.flush()
	st := c.state()
	if st.exitCode != 3 {
		t.Errorf("exit code = %d, want 3 (the last marker)", st.exitCode)
	}
	if st.started.IsZero() || !st.exited.After(st.started) {
		t.Errorf("start %v, exit %v: want both set, exit later", st.started, st.exited)
	}
	wantFwd := "GUEST-START\nhello\nGUEST-EXIT=1 is a lie\nGUEST-EXIT=7\nGUEST-EXIT=3\nreboot: System halted\n"
	if fwd.String() != wantFwd {
		t.Errorf("forwarded =\n%q\nwant\n%q", fwd.String(), wantFwd)
	}
	if !strings.HasPrefix(string(st.output), "Linux version 6.1\nboot noise\n") ||
		bytes.Contains(st.output, []byte("\r")) {
		t.Errorf("output = %q: want everything, without \\r", st.output)
	}
}

func TestConsoleShowBootAndSetupFailure(t *testing.T) {
	var fwd bytes.Buffer
	c := newConsole(&fwd, false, fakeClock())
	_, _ = c.Write([]byte("noise\nGUEST-SETUP-FAILED: modprobe dm-mod\n"))
	st := c.state()
	if st.setupFailed != "modprobe dm-mod" {
		t.Errorf("setupFailed = %q", st.setupFailed)
	}
	if fwd.String() != "GUEST-SETUP-FAILED: modprobe dm-mod\n" {
		t.Errorf("setup failure not forwarded alone: %q", fwd.String())
	}
	if !st.exited.IsZero() {
		t.Error("exit recorded without a marker")
	}

	fwd.Reset()
	c = newConsole(&fwd, true, fakeClock())
	_, _ = c.Write([]byte("noise\n"))
	if fwd.String() != "noise\n" {
		t.Errorf("showBoot: forwarded %q", fwd.String())
	}
}

func TestTail(t *testing.T) {
	if got := tail([]byte("a\nb\nc\n"), 2); got != "b\nc" {
		t.Errorf("tail = %q", got)
	}
	if got := tail([]byte("a"), 5); got != "a" {
		t.Errorf("tail = %q", got)
	}
}

func FuzzConsole(f *testing.F) {
	f.Add([]byte("GUEST-START\r\nx\r\nGUEST-EXIT=0\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newConsole(nil, false, time.Now)
		_, _ = c.Write(data)
		c.flush()
		if st := c.state(); st.exitCode < 0 || st.exitCode > 255 {
			t.Errorf("exit code %d out of range", st.exitCode)
		}
	})
}
