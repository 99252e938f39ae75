package umlswitch

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
)

// guest speaks the guest side of the daemon transport the way UML's daemon_user.c does: an
// abstract data socket named by 12 binary bytes padded to the full sun_path, the request, and
// the switch's address read back as a raw sockaddr_un.
type guest struct {
	t    *testing.T
	mac  net.HardwareAddr
	ctl  net.Conn
	data *net.UnixConn
	sw   *net.UnixAddr
}

func attachGuest(t *testing.T, ctl string, n byte) *guest {
	t.Helper()
	// The name holds NULs inside, as the guest's {0, pid, usecs} does.
	raw := make([]byte, sunPathLen)
	copy(raw[1:], []byte{n, 0, 0, 0, 0x10 + n, 0, 0, 0})
	copy(raw[9:], fmt.Sprintf("%s-%d", t.Name(), n))
	local := &net.UnixAddr{Name: "@" + string(raw[1:]), Net: "unixgram"}
	data, err := net.ListenUnixgram("unixgram", local)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = data.Close() })
	c, err := net.Dial("unix", ctl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	req := request(raw)
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	answer := make([]byte, sockaddrLen)
	if _, err := io.ReadFull(c, answer); err != nil {
		t.Fatalf("read the switch's data address: %v", err)
	}
	if answer[2] != 0 || binary.LittleEndian.Uint16(answer) != 1 {
		t.Fatalf("switch answered %q, want an abstract AF_UNIX address", answer[:16])
	}
	sw := &net.UnixAddr{Name: "@" + string(answer[3:]), Net: "unixgram"}
	return &guest{t: t, mac: net.HardwareAddr{2, 0, 0, 0, 0, n}, ctl: c, data: data, sw: sw}
}

// request is a guest's request_v3 naming its data socket by the sun_path raw.
func request(raw []byte) []byte {
	req := make([]byte, requestLen)
	binary.LittleEndian.PutUint32(req[0:], switchMagic)
	binary.LittleEndian.PutUint32(req[4:], switchVersion)
	binary.LittleEndian.PutUint16(req[12:], 1) // AF_UNIX
	copy(req[14:], raw)
	return req
}

func (g *guest) send(dst net.HardwareAddr, payload string) {
	g.t.Helper()
	frame := append(append(append([]byte{}, dst...), g.mac...), 0x08, 0x00)
	if _, err := g.data.WriteToUnix(append(frame, payload...), g.sw); err != nil {
		g.t.Fatal(err)
	}
}

// receive returns the payloads of the frames that arrive within wait, stopping after want.
func (g *guest) receive(want int, wait time.Duration) []string {
	g.t.Helper()
	var got []string
	buf := make([]byte, maxFrame)
	for len(got) < want || want == 0 {
		_ = g.data.SetReadDeadline(time.Now().Add(wait))
		n, err := g.data.Read(buf)
		if err != nil {
			return got
		}
		if n < 14 {
			g.t.Fatalf("short frame of %d bytes", n)
		}
		got = append(got, string(buf[14:n]))
	}
	return got
}

var broadcast = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// startSwitch runs a switch for the test and returns it with its control socket's path.
func startSwitch(t *testing.T) (*Switch, string) {
	t.Helper()
	ctl := filepath.Join(t.TempDir(), "sw.ctl")
	s, err := Listen(ctl, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, ctl
}

func TestSwitchFloodsLearnsAndForgets(t *testing.T) {
	s, ctl := startSwitch(t)
	a, b, c := attachGuest(t, ctl, 1), attachGuest(t, ctl, 2), attachGuest(t, ctl, 3)

	// Broadcast and unknown destinations reach every other guest, not the sender.
	a.send(broadcast, "who has b")
	for _, g := range []*guest{b, c} {
		if got := g.receive(1, 5*time.Second); len(got) != 1 || got[0] != "who has b" {
			t.Fatalf("guest %s got %q, want the broadcast", g.mac, got)
		}
	}
	if got := a.receive(0, 100*time.Millisecond); len(got) != 0 {
		t.Fatalf("the sender got its own broadcast back: %q", got)
	}
	// b answers a (learnt from the broadcast): only a gets it, and b is learnt too.
	b.send(a.mac, "b is here")
	if got := a.receive(1, 5*time.Second); len(got) != 1 || got[0] != "b is here" {
		t.Fatalf("a got %q, want b's answer", got)
	}
	a.send(b.mac, "data for b")
	if got := b.receive(1, 5*time.Second); len(got) != 1 || got[0] != "data for b" {
		t.Fatalf("b got %q, want a's data", got)
	}
	if got := c.receive(0, 200*time.Millisecond); len(got) != 0 {
		t.Fatalf("c got %q of a conversation between a and b", got)
	}

	// A guest that ends (its control connection closes) is forgotten: frames to its address
	// are flooded again, and nothing is sent to its port.
	_ = b.ctl.Close()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.ports) == 2 })
	a.send(b.mac, "b is gone")
	if got := c.receive(1, 5*time.Second); len(got) != 1 || got[0] != "b is gone" {
		t.Fatalf("c got %q, want the frame for the forgotten address flooded", got)
	}
	if got := b.receive(0, 200*time.Millisecond); len(got) != 0 {
		t.Fatalf("the detached guest got %q", got)
	}
	if frames, _ := s.Stats(); frames != 5 {
		t.Errorf("%d frames forwarded, want 5", frames)
	}
}

func TestSwitchRefusesBadRequests(t *testing.T) {
	_, ctl := startSwitch(t)
	for _, tc := range []struct {
		name string
		edit func([]byte)
		err  string
	}{
		{"magic", func(r []byte) { r[0] = 0 }, "magic"},
		{"version", func(r []byte) { r[4] = 2 }, "version 2"},
		{"type", func(r []byte) { r[8] = 1 }, "type 1"},
		{"family", func(r []byte) { r[12] = 2 }, "family 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request(nil)
			tc.edit(req)
			if _, err := parseRequest(req); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one about %q", err, tc.err)
			}
			// Over the socket, the switch closes the connection without an answer.
			c, err := net.Dial("unix", ctl)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(req); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			// (Closed with the request's padding unread, so EOF or a reset.)
			if n, err := c.Read(make([]byte, sockaddrLen)); n != 0 || err == nil || os.IsTimeout(err) {
				t.Fatalf("read %d bytes, %v: want the connection closed", n, err)
			}
		})
	}
	if _, err := parseRequest(make([]byte, 20)); err == nil {
		t.Fatal("a short request was accepted")
	}
}

func TestKernelArg(t *testing.T) {
	got := KernelArg(0, net.HardwareAddr{2, 0x4c, 0x56, 0x4d, 0, 1}, "/run/x/nodenet.ctl")
	if want := "eth0=daemon,02:4c:56:4d:00:01,unix,/run/x/nodenet.ctl"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5 s")
		}
	}
}
