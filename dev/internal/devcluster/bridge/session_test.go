package bridge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHTTPBothWays(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			hostAddr := serveHTTP(t, hello("host"))
			guestAddr := serveHTTP(t, hello("guest"))
			h, g := bridgePair(t, kind, Options{}, Options{})

			// Guest → host through a guest listener (how a node agent reaches the apiserver).
			fwd, err := g.Forward("127.0.0.1:0", hostAddr)
			if err != nil {
				t.Fatal(err)
			}
			// Host → guest through a host listener, and by dialing a stream directly.
			exposed, err := h.Expose("127.0.0.1:0", portOf(t, guestAddr))
			if err != nil {
				t.Fatal(err)
			}
			dialGuest := func(ctx context.Context, _, _ string) (net.Conn, error) {
				return h.DialGuest(ctx, portOf(t, guestAddr))
			}
			for _, tc := range []struct {
				name string
				dial func(context.Context, string, string) (net.Conn, error)
				url  string
				want string
			}{
				{"guest to host via forward", nil, "http://" + fwd.String() + "/a", "hello from host: /a"},
				{"host to guest via expose", nil, "http://" + exposed.String() + "/b", "hello from guest: /b"},
				{"host to guest via DialGuest", dialGuest, "http://guest/c", "hello from guest: /c"},
			} {
				got, err := get(ctx, tc.dial, tc.url)
				if err != nil || got != tc.want {
					t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
				}
			}
		})
	}
}

// openRaw opens a stream with a hand-written header and returns the peer's reply.
func openRaw(t *testing.T, s *Session, header string) error {
	t.Helper()
	st, err := s.mux.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(st, header+"\n"); err != nil {
		t.Fatal(err)
	}
	return readReply(st)
}

func TestPeerRefusesTargets(t *testing.T) {
	open := serveHTTP(t, hello("host"))
	allowed := serveHTTP(t, hello("allowed"))
	closed := loopbackPort(closedPort(t))
	for _, allow := range [][]string{nil, {allowed}} {
		h, g := bridgePair(t, "socketpair", Options{Allow: allow}, Options{})
		for _, tc := range []struct {
			target string
			want   string // "" when the host must accept
		}{
			{"10.1.2.3:80", "not a loopback IP address"},
			{"192.168.0.1:6443", "not a loopback IP address"},
			{"[::ffff:10.0.0.1]:80", "not a loopback IP address"},
			{"localhost:80", "not a loopback IP address"},
			{"example.com:443", "not a loopback IP address"},
			{"127.0.0.1:99999", "invalid port"},
			{"127.0.0.1:0", "invalid port"},
			{"127.0.0.1", "missing port"},
			{closed, map[bool]string{true: "connection refused", false: "not in the allowed list"}[allow == nil]},
			{allowed, ""},
			{open, map[bool]string{true: "", false: "not in the allowed list"}[allow == nil]},
		} {
			t.Run(fmt.Sprintf("allow=%v/%s", allow, tc.target), func(t *testing.T) {
				err := openRaw(t, g, tc.target)
				if tc.want == "" {
					if err != nil {
						t.Errorf("host refused %s: %v", tc.target, err)
					}
					return
				}
				if e := wantErr(err, ErrRefused, tc.want); e != nil {
					t.Error(e)
				}
			})
		}
		_ = h.Close()
	}
}

func TestLocalChecks(t *testing.T) {
	ctx := context.Background()
	h, g := bridgePair(t, "pipe", Options{}, Options{AllowNets: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}})
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"dial non-loopback", func() error { _, err := g.Dial(ctx, "10.0.0.1:6443"); return err }, "not a loopback"},
		{"dial host name", func() error { _, err := h.Dial(ctx, "localhost:80"); return err }, "not a loopback"},
		{"dial outside allowed nets", func() error { _, err := h.Dial(ctx, "10.245.0.1:443"); return err }, "not a loopback"},
		{"forward non-loopback listen", func() error { _, err := g.Forward("0.0.0.0:0", "127.0.0.1:1"); return err }, "not a loopback"},
		{"forward non-loopback target", func() error { _, err := g.Forward("127.0.0.1:0", "10.0.0.1:1"); return err }, "not a loopback"},
		{"expose wildcard", func() error { _, err := h.Expose(":0", 80); return err }, "not a loopback"},
		{"guest refuses closed port", func() error { _, err := h.DialGuest(ctx, closedPort(t)); return err }, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := wantErr(tc.call(), nil, tc.want); err != nil {
				t.Error(err)
			}
		})
	}
	for _, opts := range []Options{
		{Allow: []string{"10.0.0.1:80"}},
		{Forward: map[string]string{"127.0.0.1:0": "1.1.1.1:53"}},
		{Forward: map[string]string{"[::]:0": "127.0.0.1:53"}},
	} {
		a, b := net.Pipe()
		if _, err := Host(ctx, a, opts); err == nil {
			t.Errorf("Host accepted options %+v", opts)
		}
		if _, err := GuestConn(ctx, b, opts); err == nil {
			t.Errorf("GuestConn accepted options %+v", opts)
		}
	}
}

// serveDigest accepts connections, reads each until EOF, then answers with the SHA-256 of what
// it read and closes: a request only completes if the client's half-close crossed the bridge.
func serveDigest(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				h := sha256.New()
				if _, err := io.Copy(h, c); err == nil {
					_, _ = c.Write(h.Sum(nil))
				}
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// digestRoundTrip sends size random bytes over c, half-closes and checks the digest it gets back.
func digestRoundTrip(c net.Conn, size int, seed uint64) error {
	defer c.Close()
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = closeWrite(c)
		}
		errc <- err
	}()
	got, err := io.ReadAll(c)
	if werr := <-errc; werr != nil {
		return fmt.Errorf("write: %w", werr)
	}
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	want := sha256.Sum256(data)
	if !bytes.Equal(got, want[:]) {
		return fmt.Errorf("digest of %d bytes = %x, want %x", size, got, want)
	}
	return nil
}

func TestManyConcurrentStreamsWithHalfClose(t *testing.T) {
	const conns = 100
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			base := runtime.NumGoroutine()
			hostSrv, guestSrv := serveDigest(t), serveDigest(t)
			h, g := bridgePair(t, kind, Options{}, Options{})
			fwd, err := g.Forward("127.0.0.1:0", hostSrv)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			errs := make(chan error, 2*conns)
			for i := range conns {
				size := 1 + i*4099 // 1 B … ~400 KiB, beyond yamux's 256 KiB window
				// Guest → host through a guest listener.
				wg.Go(func() {
					c, err := net.Dial("tcp", fwd.String())
					if err == nil {
						err = digestRoundTrip(c, size, uint64(i))
					}
					errs <- err
				})
				// Host → guest through DialGuest.
				wg.Go(func() {
					c, err := h.DialGuest(ctx, portOf(t, guestSrv))
					if err == nil {
						err = digestRoundTrip(c, size, uint64(i)+conns)
					}
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			eventually(t, settle, "streams left open", func() error {
				if n, m := h.NumStreams(), g.NumStreams(); n+m > 0 {
					return fmt.Errorf("host %d, guest %d streams", n, m)
				}
				return nil
			})
			_ = h.Close()
			_ = g.Close()
			goroutinesBack(t, base+6) // the two digest servers' accept loops and listeners
		})
	}
}

func TestSessionEnd(t *testing.T) {
	for _, tc := range []struct {
		name      string
		closeHost bool
	}{
		{"host closes", true},
		{"guest closes", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			h, g := bridgePair(t, "socketpair", Options{}, Options{})
			// An idle forwarded connection each way must be cut when the session ends.
			idle := serveDigest(t)
			fwd, err := g.Forward("127.0.0.1:0", idle)
			if err != nil {
				t.Fatal(err)
			}
			fromGuest, err := net.Dial("tcp", fwd.String())
			if err != nil {
				t.Fatal(err)
			}
			defer fromGuest.Close()
			fromHost, err := h.DialGuest(context.Background(), portOf(t, idle))
			if err != nil {
				t.Fatal(err)
			}
			defer fromHost.Close()
			eventually(t, settle, "streams", func() error {
				if n := h.NumStreams(); n != 2 {
					return fmt.Errorf("host has %d streams, want 2", n)
				}
				return nil
			})
			closing, other := h.Session, g
			if !tc.closeHost {
				closing, other = g, h.Session
			}
			if err := closing.Close(); err != nil {
				t.Fatal(err)
			}
			if err := closing.Wait(); err != nil {
				t.Errorf("Wait after Close = %v", err)
			}
			select {
			case <-other.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("other side did not notice the end of the line")
			}
			if err := other.Wait(); err == nil || !strings.Contains(err.Error(), "bridge line ended") {
				t.Errorf("other side Wait = %v", err)
			}
			_ = fromGuest.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := fromGuest.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
				t.Errorf("forwarded connection after the end: read %v, want EOF", err)
			}
			if _, err := g.Forward("127.0.0.1:0", idle); err == nil {
				t.Error("Forward on an ended session succeeded")
			}
			_ = fromGuest.Close()
			_ = fromHost.Close()
			goroutinesBack(t, base+3)
		})
	}
}
