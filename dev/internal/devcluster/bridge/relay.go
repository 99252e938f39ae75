package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// RelayFunc connects a stream the other side opened to target, an address that is neither
// loopback nor in [Options.AllowNets], without dialing it here: typically by opening a stream
// over another guest's bridge ([Session.Dial] of that session). ctx bounds the connecting, not the
// connection. The session carries the stream to the returned connection until both directions
// are done and then closes it; when the connection is itself a bridge stream, half-closes pass
// through in both directions and a large transfer is paced by the slower of the two lines.
type RelayFunc func(ctx context.Context, target netip.AddrPort) (net.Conn, error)

// ErrNotRedirected is returned for a connection to a redirect listener
// ([Session.ForwardRedirected]) that was not redirected there from another destination.
var ErrNotRedirected = errors.New("connection was not redirected")

// relayTo has Relay connect target for the other side.
func (s *Session) relayTo(target netip.AddrPort) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.handshake)
	defer cancel()
	c, err := s.relay(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("relay to %s: %w", target, err)
	}
	return c, nil
}

// ForwardRedirected listens on the loopback address listen (port 0 picks one) for connections
// that this side's netfilter redirected there (an iptables DNAT to listen, or REDIRECT), and
// carries each to its original destination as dialed, or relayed ([Options.Relay]), by the
// other side. The other side decides which destinations it serves. A connection whose original
// destination is unknown or a loopback address (it was not redirected), or that the other side
// refuses, is reset. It returns the bound address; the listener lives until the session ends.
//
// In a guest node this carries TCP to pod addresses of other nodes: netfilter redirects it here,
// and the host relays each connection over the other node's bridge.
func (s *Session) ForwardRedirected(listen string) (net.Addr, error) {
	if _, err := parseLoopback(listen, true); err != nil {
		return nil, fmt.Errorf("forward redirected: %w", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("forward redirected: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = ln.Close()
		return nil, ErrClosed
	}
	s.listeners = append(s.listeners, ln)
	s.wg.Add(1)
	go s.acceptLocal(ln, "original destinations", s.redirectTarget)
	s.log.V(1).Info("Forwarding redirected connections", "listen", ln.Addr().String())
	return ln.Addr(), nil
}

// redirectTarget is the original destination of the redirected connection c.
func (s *Session) redirectTarget(c net.Conn) (string, error) {
	dst, err := s.originalDst(c)
	if err != nil {
		return "", fmt.Errorf("original destination of %s: %w", c.RemoteAddr(), err)
	}
	if !dst.IsValid() || dst.Addr().IsLoopback() || dst.Addr().IsUnspecified() {
		return "", fmt.Errorf("connection from %s to %s: %w", c.RemoteAddr(), dst, ErrNotRedirected)
	}
	return dst.String(), nil
}
