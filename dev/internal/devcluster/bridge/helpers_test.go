package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
)

// transports are the lines the unit tests run the bridge over.
var transports = []string{"socketpair", "pipe"}

// linePair returns two connected lines: a Unix socketpair (what UML gets) or a net.Pipe.
func linePair(t *testing.T, kind string) (hostEnd, guestEnd net.Conn) {
	t.Helper()
	if kind == "pipe" {
		return net.Pipe()
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "line"+strconv.Itoa(i))
		c, err := net.FileConn(f)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	return conns[0], conns[1]
}

// bridgePair connects a host and an in-process guest side over a line of the given kind. Both
// are closed at the end of the test.
func bridgePair(t *testing.T, kind string, hostOpts, guestOpts Options) (*HostSession, *Session) {
	t.Helper()
	hostOpts.Log = testr.NewWithOptions(t, testr.Options{LogTimestamp: true})
	guestOpts.Log = hostOpts.Log.WithName("guest")
	hostEnd, guestEnd := linePair(t, kind)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		s   *Session
		err error
	}
	gch := make(chan result, 1)
	go func() {
		s, err := GuestConn(ctx, guestEnd, guestOpts)
		gch <- result{s, err}
	}()
	h, err := Host(ctx, hostEnd, hostOpts)
	g := <-gch
	if err != nil || g.err != nil {
		t.Fatalf("handshake: host %v, guest %v", err, g.err)
	}
	t.Cleanup(func() {
		_ = h.Close()
		_ = g.s.Close()
	})
	return h, g.s
}

// serveHTTP serves h on a fresh 127.0.0.1 port until the end of the test.
func serveHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// hello answers "hello from <name>: <path>".
func hello(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "hello from %s: %s", name, r.URL.Path)
	})
}

// get fetches url with a fresh connection made by dial (nil: the default dialer).
func get(
	ctx context.Context,
	dial func(context.Context, string, string) (net.Conn, error),
	url string,
) (string, error) {
	tr := &http.Transport{DialContext: dial, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %s: %s", resp.Status, b)
	}
	return string(b), nil
}

// portOf returns the port of a "host:port" address.
func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := portOf(t, ln.Addr().String())
	_ = ln.Close()
	return port
}

// settle bounds how long a test waits for streams and goroutines to go away: generous, since
// make test runs these tests under -race on a machine that is busy with the e2e cluster.
const settle = 30 * time.Second

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// goroutinesBack waits until the goroutine count drops to at most base.
func goroutinesBack(t *testing.T, base int) {
	t.Helper()
	eventually(t, settle, "goroutines left behind", func() error {
		if n := runtime.NumGoroutine(); n > base {
			buf := make([]byte, 1<<20)
			stacks := string(buf[:runtime.Stack(buf, true)])
			return fmt.Errorf("%d goroutines, want <= %d:\n%s", n, base, stacks)
		}
		return nil
	})
}

// wantErr checks that err matches target (errors.Is) and contains substr.
func wantErr(err, target error, substr string) error {
	switch {
	case err == nil:
		return errors.New("no error")
	case target != nil && !errors.Is(err, target):
		return fmt.Errorf("error %w is not %w", err, target)
	case !strings.Contains(err.Error(), substr):
		return fmt.Errorf("error %w lacks %q", err, substr)
	}
	return nil
}
