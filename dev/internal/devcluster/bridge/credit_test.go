package bridge

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// creditPair returns two creditConns over a net.Pipe, closed at the end of the test.
func creditPair(t *testing.T, window int) (a, b *creditConn) {
	t.Helper()
	x, y := net.Pipe()
	a, b = newCreditConn(x, window), newCreditConn(y, window)
	t.Cleanup(func() {
		_ = a.Close()
		_ = b.Close()
	})
	return a, b
}

func TestCreditOrdering(t *testing.T) {
	a, b := creditPair(t, 0)
	go func() {
		for i := range 2000 {
			if _, err := a.Write([]byte{byte(i), byte(i >> 8)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	got := make([]byte, 4000)
	if _, err := io.ReadFull(b, got); err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if got[2*i] != byte(i) || got[2*i+1] != byte(i>>8) {
			t.Fatalf("write %d arrived as %v", i, got[2*i:2*i+2])
		}
	}
}

// TestCreditLargeTransfer sends 4 MiB each way at once with odd write and read sizes.
func TestCreditLargeTransfer(t *testing.T) {
	a, b := creditPair(t, 0)
	const size = 4 << 20
	var wg sync.WaitGroup
	for _, dir := range [][2]*creditConn{{a, b}, {b, a}} {
		data := make([]byte, size)
		_, _ = rand.Read(data)
		want := sha256.Sum256(data)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for rest := data; len(rest) > 0; {
				n := min(len(rest), 7919)
				if _, err := dir[0].Write(rest[:n]); err != nil {
					t.Error(err)
					return
				}
				rest = rest[n:]
			}
		}()
		go func() {
			defer wg.Done()
			h := sha256.New()
			buf := make([]byte, 3001)
			if _, err := io.CopyBuffer(h, io.LimitReader(dir[1], size), buf); err != nil {
				t.Error(err)
				return
			}
			if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
				t.Errorf("SHA-256 %x, want %x", got, want)
			}
		}()
	}
	wg.Wait()
}

// TestCreditWindow checks that a sender never has more than the window unconsumed, and that it
// waits while the reader does not read.
func TestCreditWindow(t *testing.T) {
	for _, window := range []int{512, 2048} {
		x, y := net.Pipe()
		a := newCreditConn(x, window)
		var peak atomic.Int64
		a.onSend = func(inFlight int) {
			if int64(inFlight) > peak.Load() {
				peak.Store(int64(inFlight))
			}
		}
		b := newCreditConn(y, window)
		var sent atomic.Int64
		go func() {
			n, _ := a.Write(make([]byte, 64<<10))
			sent.Add(int64(n))
		}()
		time.Sleep(100 * time.Millisecond)
		b.mu.Lock()
		buffered := len(b.buf)
		b.mu.Unlock()
		if buffered != window {
			t.Errorf("window %d: receiver holds %d bytes while not reading", window, buffered)
		}
		if sent.Load() != 0 {
			t.Errorf("window %d: Write returned early", window)
		}
		if _, err := io.ReadFull(b, make([]byte, 64<<10)); err != nil {
			t.Fatal(err)
		}
		if p := peak.Load(); p > int64(window) {
			t.Errorf("window %d: %d bytes were in flight", window, p)
		}
		_, _ = a.Close(), b.Close()
	}
}

// TestCreditClose checks that Close unblocks a waiting reader and writer, and that the other
// side gets the data sent before and then sees the line end.
func TestCreditClose(t *testing.T) {
	a, b := creditPair(t, 1024)
	blocked := make(chan error, 2)
	go func() { _, err := a.Write(make([]byte, 10<<10)); blocked <- err }() // waits for credit
	go func() { _, err := a.Read(make([]byte, 1)); blocked <- err }()
	time.Sleep(50 * time.Millisecond)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-blocked:
			if err == nil {
				t.Error("a blocked call on the closed side returned no error")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not unblock a waiting call")
		}
	}
	// b holds the first window of data; returning credit for it fails once the line is gone.
	got, err := io.ReadAll(b)
	if len(got) != 1024 || (err != nil && !errors.Is(err, io.ErrClosedPipe)) {
		t.Errorf("peer after close: %d bytes, %v", len(got), err)
	}
	if _, err := b.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("peer read after the line ended: %v, want EOF", err)
	}
	if _, err := b.Write([]byte("x")); err == nil {
		t.Error("write to a closed line succeeded")
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, errCreditClosed) {
		t.Errorf("write after Close: %v", err)
	}
}
