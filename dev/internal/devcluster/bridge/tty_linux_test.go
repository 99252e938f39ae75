package bridge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns the master and the slave of a new pseudo-terminal; the slave stands in for
// the guest's /dev/ttyS1, with the same line discipline.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { _ = master.Close() })
	rc, err := master.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var opErr error
	if err := rc.Control(func(fd uintptr) {
		if opErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); opErr == nil {
			n, opErr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	}); err != nil || opErr != nil {
		t.Fatalf("unlock pty: %v %v", err, opErr)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slave.Close() })
	return master, slave
}

// allBytes is every byte value, with the ones a cooked tty rewrites or acts on repeated.
func allBytes() []byte {
	b := make([]byte, 0, 300)
	for i := range 256 {
		b = append(b, byte(i))
	}
	return append(b, '\r', '\n', '\r', 0x03, 0x04, 0x11, 0x13, 0x1a, 0x7f, 0xff, '\n')
}

// transfer writes data to w and reads the same amount from r. A cooked tty may stop its output
// (^S), so the write is not waited for beyond the read deadline; closing the pty ends it.
func transfer(w io.Writer, r *os.File, data []byte) ([]byte, error) {
	errc := make(chan error, 1)
	go func() {
		_, err := w.Write(data)
		errc <- err
	}()
	_ = r.SetReadDeadline(time.Now().Add(2 * time.Second))
	got := make([]byte, len(data))
	_, err := io.ReadFull(r, got)
	select {
	case werr := <-errc:
		if werr != nil {
			return got, werr
		}
	case <-time.After(time.Second):
		return got, errors.New("write blocked")
	}
	return got, err
}

func TestMakeRawIsEightBitClean(t *testing.T) {
	data := allBytes()
	for _, tc := range []struct {
		name string
		raw  bool
	}{
		{"cooked tty mangles bytes", false},
		{"raw tty carries every byte", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			master, slave := openPTY(t)
			if tc.raw {
				if err := makeRaw(slave); err != nil {
					t.Fatal(err)
				}
			}
			toGuest, err := transfer(master, slave, data)
			if tc.raw && (err != nil || !bytes.Equal(toGuest, data)) {
				t.Errorf("host → guest: %v\ngot  %q\nwant %q", err, toGuest, data)
			}
			fromGuest, err2 := transfer(slave, master, data)
			if tc.raw && (err2 != nil || !bytes.Equal(fromGuest, data)) {
				t.Errorf("guest → host: %v\ngot  %q\nwant %q", err2, fromGuest, data)
			}
			if !tc.raw && err == nil && err2 == nil && bytes.Equal(toGuest, data) && bytes.Equal(fromGuest, data) {
				t.Error("a cooked tty carried every byte unchanged: the raw case proves nothing")
			}
		})
	}
}
