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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// relayNode is one guest of a relay test and the host side of its bridge. Its "pod network" is
// podNet: the host relays connections to an address there over this node's bridge, to the
// same port on the guest's loopback (a test cannot dial real pod addresses).
type relayNode struct {
	host   *HostSession
	guest  *Session
	podNet netip.Prefix
	// redirects maps a redirect listener's address to the original destination the fake
	// netfilter reports for the connections it accepts (netip.AddrPort values).
	redirects sync.Map
}

// relayHandshake bounds a stream's header exchange in the relay tests.
const relayHandshake = 5 * time.Minute

// relayCluster connects a host to two in-process guests whose pod networks are 10.244.1.0/24
// and 10.244.2.0/24. The host relays what a guest asks for in the other's pod network over the
// other's bridge; relayed, when set, counts the relayed connections.
func relayCluster(t *testing.T, kind string, relayed *sync.WaitGroup) [2]*relayNode {
	t.Helper()
	var nodes [2]*relayNode
	for i := range nodes {
		nodes[i] = &relayNode{podNet: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 244, byte(i + 1), 0}), 24)}
	}
	for i, n := range nodes {
		relay := func(ctx context.Context, target netip.AddrPort) (net.Conn, error) {
			other := nodes[1-i]
			if !other.podNet.Contains(target.Addr()) {
				return nil, fmt.Errorf("no node has %s", target.Addr())
			}
			if relayed != nil {
				relayed.Done()
			}
			return other.host.Dial(ctx, loopbackPort(int(target.Port())))
		}
		// The tests check what is relayed, not how fast: on a loaded machine (make test runs this
		// under -race beside the e2e cluster's guests) the lines are saturated by the transfers
		// and a stream's header reply waits behind them for longer than the default timeout.
		host := Options{Allow: []string{"127.0.0.1:1"}, Relay: relay, HandshakeTimeout: relayHandshake}
		n.host, n.guest = bridgePair(t, kind, host, Options{HandshakeTimeout: relayHandshake})
		n.guest.originalDst = func(c net.Conn) (netip.AddrPort, error) {
			dst, ok := n.redirects.Load(c.LocalAddr().String())
			if !ok { // not redirected: the listener's own address
				return netip.MustParseAddrPort(c.LocalAddr().String()), nil
			}
			return dst.(netip.AddrPort), nil
		}
	}
	return nodes
}

// redirect opens a redirect listener in n's guest whose connections the fake netfilter reports
// as headed for dst, and returns its address.
func (n *relayNode) redirect(t *testing.T, dst string) string {
	t.Helper()
	addr, err := n.guest.ForwardRedirected("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if dst != "" {
		n.redirects.Store(addr.String(), netip.MustParseAddrPort(dst))
	}
	return addr.String()
}

// podAddr is the address in n's pod network, host 7, that the relay carries to the guest's
// loopback address addr.
func (n *relayNode) podAddr(t *testing.T, addr string) string {
	return netip.AddrPortFrom(n.podNet.Addr().Next().Next(), uint16(portOf(t, addr))).String() //nolint:gosec // a port
}

// serveEcho accepts connections and sends back everything it reads, half-closing at EOF.
func serveEcho(t *testing.T) string {
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
				if _, err := io.Copy(c, c); err == nil {
					_ = closeWrite(c)
					_, _ = io.Copy(io.Discard, c)
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

// echoRoundTrip sends size random bytes over c while reading the echo, half-closes, and checks
// that the same bytes came back: a bulk transfer each way at once.
func echoRoundTrip(c net.Conn, size int, seed uint64) error {
	defer c.Close()
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(seed, 2))
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
	h := sha256.New()
	n, err := io.Copy(h, c)
	if werr := <-errc; werr != nil {
		return fmt.Errorf("write: %w", werr)
	}
	if err != nil {
		return fmt.Errorf("read after %d bytes: %w", n, err)
	}
	if want := sha256.Sum256(data); n != int64(size) || !bytes.Equal(h.Sum(nil), want[:]) {
		return fmt.Errorf("echo of %d bytes: got %d bytes, sha256 %x, want %x", size, n, h.Sum(nil), want)
	}
	return nil
}

func TestRelayBetweenGuests(t *testing.T) {
	const conns = 20
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			base := runtime.NumGoroutine()
			var relayed sync.WaitGroup
			relayed.Add(2 * (2*conns + 1))
			nodes := relayCluster(t, kind, &relayed)
			var wg sync.WaitGroup
			errs := make(chan error, 2*(2*conns+1))
			for i, n := range nodes {
				other := nodes[1-i]
				// A "pod" of the other node; this guest's netfilter redirects connections to
				// its pod address to the redirect listener.
				digest := n.redirect(t, other.podAddr(t, serveDigest(t)))
				echo := n.redirect(t, other.podAddr(t, serveEcho(t)))
				for k := range conns {
					size := 1 + k*53_117 // 1 B … ~1 MiB, beyond yamux's 256 KiB stream window
					wg.Go(func() {
						c, err := net.Dial("tcp", digest)
						if err == nil {
							err = digestRoundTrip(c, size, uint64(10*k+i))
						}
						errs <- err
					})
					wg.Go(func() {
						c, err := net.Dial("tcp", echo)
						if err == nil {
							err = echoRoundTrip(c, size, uint64(10*k+i))
						}
						errs <- err
					})
				}
				// One large transfer each way through both lines at once.
				wg.Go(func() {
					c, err := net.Dial("tcp", echo)
					if err == nil {
						err = echoRoundTrip(c, 8<<20, uint64(i))
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
			relayed.Wait()
			eventually(t, settle, "streams left open", func() error {
				for i, n := range nodes {
					if h, g := n.host.NumStreams(), n.guest.NumStreams(); h+g > 0 {
						return fmt.Errorf("node %d: host %d, guest %d streams", i, h, g)
					}
				}
				return nil
			})
			for _, n := range nodes {
				_ = n.host.Close()
				_ = n.guest.Close()
			}
			goroutinesBack(t, base+12) // the four servers' accept loops and listeners
		})
	}
}

// wantReset checks that the connection to addr is reset without a byte of answer (a reset that
// arrives before connect returns fails the dial).
func wantReset(addr string) error {
	c, err := net.Dial("tcp", addr)
	if errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("read %d bytes, %w; want a reset", n, err)
	}
	return nil
}

func TestRelayRefusals(t *testing.T) {
	nodes := relayCluster(t, "socketpair", nil)
	a, b := nodes[0], nodes[1]
	srv := serveDigest(t)
	unrouted := a.redirect(t, "10.245.0.1:80")
	notRedirected := a.redirect(t, "")
	noListener := a.redirect(t, b.podAddr(t, loopbackPort(closedPort(t))))
	for name, addr := range map[string]string{
		"relay refuses": unrouted, "not redirected": notRedirected, "nothing listens there": noListener,
	} {
		t.Run(name, func(t *testing.T) {
			if err := wantReset(addr); err != nil {
				t.Error(err)
			}
		})
	}
	// The relay serves other addresses only: loopback requests still meet the host's Allow list.
	err := openRaw(t, a.guest, srv)
	if e := wantErr(err, ErrRefused, "not in the allowed list"); e != nil {
		t.Error(e)
	}
	// Without a relay, the host refuses addresses outside its own loopback.
	h, g := bridgePair(t, "pipe", Options{}, Options{})
	if e := wantErr(openRaw(t, g, b.podAddr(t, srv)), ErrRefused, "not a loopback IP address"); e != nil {
		t.Error(e)
	}
	_ = h.Close()
}

// TestRelaySessionEnd: when either node's bridge ends, the relayed connections through it end
// on the other node too, and closing the host's session returns at once although the other
// leg of an idle relayed connection is still open.
func TestRelaySessionEnd(t *testing.T) {
	for _, far := range []bool{false, true} {
		t.Run(fmt.Sprintf("far=%v", far), func(t *testing.T) {
			base := runtime.NumGoroutine()
			nodes := relayCluster(t, "socketpair", nil)
			a, b := nodes[0], nodes[1]
			echo := a.redirect(t, b.podAddr(t, serveEcho(t)))
			c, err := net.Dial("tcp", echo)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			eventually(t, settle, "relayed stream", func() error {
				if n, m := a.host.NumStreams(), b.host.NumStreams(); n != 1 || m != 1 {
					return fmt.Errorf("host sides have %d and %d streams, want 1 each", n, m)
				}
				return nil
			})
			closing := a.host
			if far {
				closing = b.host
			}
			start := time.Now()
			if err := closing.Close(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Close took %s with an idle relayed connection", d)
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Error("relayed connection still open after a bridge ended")
			}
			for _, n := range nodes {
				_ = n.host.Close()
				_ = n.guest.Close()
			}
			goroutinesBack(t, base+3)
		})
	}
}

// TestHalfClosedStreamsLast: a stream whose opener has sent its request and half-closed keeps
// receiving for as long as the other side sends, as TCP does. yamux's close timer (5 min by
// default) reset such streams whatever still flowed: it cut a 256 MiB transfer between two nodes
// of the dev cluster after 132 MiB. The timer must stay off.
func TestHalfClosedStreamsLast(t *testing.T) {
	if d := muxConfig(logr.Discard()).StreamCloseTimeout; d != 0 {
		t.Errorf("yamux StreamCloseTimeout = %s: half-closed transfers would be reset after it", d)
	}
}
