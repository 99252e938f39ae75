package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/hashicorp/yamux"
)

// Defaults for [Options].
const (
	// DefaultDialTimeout bounds dialing a local address for the other side.
	DefaultDialTimeout = 10 * time.Second
	// DefaultHandshakeTimeout bounds a stream's header exchange.
	DefaultHandshakeTimeout = 30 * time.Second
)

// Options configure one side of a bridge.
type Options struct {
	// Forward maps local listen addresses to addresses the other side dials: each connection
	// accepted on a key is carried to the value, e.g. in a guest {"127.0.0.1:6443":
	// "127.0.0.1:6443"} makes the host's kube-apiserver reachable at the guest's 127.0.0.1:6443.
	// Both must be loopback IP literals; a listen port may be 0 (see [Session.Forward] to learn
	// the port).
	Forward map[string]string
	// Allow lists the local addresses the other side may ask this side to dial. When empty, any
	// loopback address is allowed; non-loopback addresses are refused unless in AllowNets.
	Allow []string
	// AllowNets are non-loopback networks the other side may ask this side to dial, by IP
	// literal: networks that exist only inside this side's own namespaces, such as a guest
	// node's pod network (the host reaches a webhook pod there).
	AllowNets []netip.Prefix
	// Log receives per-connection errors and, at V(1), connection events. The zero Logger
	// discards.
	Log logr.Logger
	// DialTimeout bounds dialing a local address for the other side; DefaultDialTimeout when 0.
	DialTimeout time.Duration
	// HandshakeTimeout bounds a stream's header exchange; DefaultHandshakeTimeout when 0.
	HandshakeTimeout time.Duration
	// LineWindow caps the bytes this side has sent over the line that the other side has not
	// consumed yet; DefaultLineWindow when 0, at most 65535. It keeps a guest tty's buffers from
	// filling up: UML's serial line stops delivering when they do.
	LineWindow int
}

// Session is one side of a running bridge.
type Session struct {
	mux         *yamux.Session
	line        *recordingConn
	log         logr.Logger
	allow       map[string]bool
	allowNets   []netip.Prefix
	dialTimeout time.Duration
	handshake   time.Duration

	mu        sync.Mutex
	closed    bool
	listeners []net.Listener
	wg        sync.WaitGroup

	closedLocally atomic.Bool
	done          chan struct{}
}

// validate checks opts and returns the canonical allow set (nil: any loopback address).
func (o Options) validate() (map[string]bool, error) {
	var allow map[string]bool
	for _, a := range o.Allow {
		c, err := parseLoopback(a, false)
		if err != nil {
			return nil, fmt.Errorf("allow: %w", err)
		}
		if allow == nil {
			allow = map[string]bool{}
		}
		allow[c] = true
	}
	for listen, target := range o.Forward {
		if _, err := parseLoopback(listen, true); err != nil {
			return nil, fmt.Errorf("forward listen: %w", err)
		}
		if _, err := parseLoopback(target, false); err != nil {
			return nil, fmt.Errorf("forward target: %w", err)
		}
	}
	return allow, nil
}

// start runs yamux over an established line and starts serving; on error it closes line.
func start(line io.ReadWriteCloser, server bool, allow map[string]bool, opts Options) (*Session, error) {
	s := &Session{
		line:        &recordingConn{ReadWriteCloser: newCreditConn(line, opts.LineWindow)},
		log:         opts.Log,
		allow:       allow,
		allowNets:   opts.AllowNets,
		dialTimeout: opts.DialTimeout,
		handshake:   opts.HandshakeTimeout,
		done:        make(chan struct{}),
	}
	if s.dialTimeout <= 0 {
		s.dialTimeout = DefaultDialTimeout
	}
	if s.handshake <= 0 {
		s.handshake = DefaultHandshakeTimeout
	}
	cfg := muxConfig(s.log)
	var err error
	if server {
		s.mux, err = yamux.Server(s.line, cfg)
	} else {
		s.mux, err = yamux.Client(s.line, cfg)
	}
	if err != nil {
		_ = s.line.Close()
		return nil, fmt.Errorf("start yamux: %w", err)
	}
	s.wg.Add(1)
	go s.acceptStreams()
	go s.monitor()
	for listen, target := range opts.Forward {
		if _, err := s.Forward(listen, target); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// monitor tears everything down once the multiplexer ends, for whatever reason.
func (s *Session) monitor() {
	<-s.mux.CloseChan()
	s.mu.Lock()
	s.closed = true
	listeners := s.listeners
	s.listeners = nil
	s.mu.Unlock()
	for _, l := range listeners {
		_ = l.Close()
	}
	s.wg.Wait()
	close(s.done)
}

// Close ends the session: listeners, streams and forwarded connections are closed, and Close
// returns once every goroutine of the session has ended.
func (s *Session) Close() error {
	s.closedLocally.Store(true)
	err := s.mux.Close()
	<-s.done
	if err != nil {
		return fmt.Errorf("close bridge: %w", err)
	}
	return nil
}

// Done is closed when the session has ended and its goroutines are gone.
func (s *Session) Done() <-chan struct{} { return s.done }

// Wait blocks until the session ends. It returns nil after Close, else why the line ended.
func (s *Session) Wait() error {
	<-s.done
	if s.closedLocally.Load() {
		return nil
	}
	if err := s.line.err(); err != nil {
		return fmt.Errorf("bridge line ended: %w", err)
	}
	return errors.New("bridge session ended by the other side")
}

// NumStreams is the number of open streams (for tests and diagnostics).
func (s *Session) NumStreams() int { return s.mux.NumStreams() }

// Dial opens a connection to target as dialed by the other side, which must allow it. target
// is an "ip:port" in the other side's network namespace: a loopback address, or one in the
// other side's AllowNets. The returned connection's
// Close ends this side's sending half (like TCP CloseWrite); the stream goes away once the
// other side has finished too, or the session ends.
func (s *Session) Dial(ctx context.Context, target string) (net.Conn, error) {
	ap, err := parseIPPort(target, false)
	if err != nil {
		return nil, fmt.Errorf("bridge dial: %w", err)
	}
	canon := ap.String()
	st, err := s.mux.OpenStream()
	if err != nil {
		return nil, fmt.Errorf("bridge dial %s: open stream: %w", canon, err)
	}
	// Cancelling ctx wakes the blocked handshake; yamux deadlines wake blocked calls.
	stop := context.AfterFunc(ctx, func() { _ = st.SetDeadline(time.Now()) })
	deadline := time.Now().Add(s.handshake)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = st.SetDeadline(deadline)
	err = writeHeader(st, canon)
	if err == nil {
		err = readReply(st)
	}
	if !stop() {
		err = errors.Join(ctx.Err(), err)
	}
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("bridge dial %s: %w", canon, err)
	}
	_ = st.SetDeadline(time.Time{})
	return st, nil
}

// Forward listens on the loopback address listen and carries each accepted connection to
// target as dialed by the other side. It returns the bound address (listen may use port 0).
// The listener lives until the session ends.
func (s *Session) Forward(listen, target string) (net.Addr, error) {
	if _, err := parseLoopback(listen, true); err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	canon, err := parseLoopback(target, false)
	if err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = ln.Close()
		return nil, ErrClosed
	}
	s.listeners = append(s.listeners, ln)
	s.wg.Add(1)
	go s.acceptLocal(ln, canon, func(net.Conn) (string, error) { return canon, nil })
	s.log.V(1).Info("Forwarding", "listen", ln.Addr().String(), "target", canon)
	return ln.Addr(), nil
}

func (s *Session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// acceptLocal carries each connection accepted on ln to the address targetOf names for it (what,
// for the logs, describes the targets).
func (s *Session) acceptLocal(ln net.Listener, what string, targetOf func(net.Conn) (string, error)) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if !s.isClosed() {
				s.log.Error(err, "Forward listener failed", "listen", ln.Addr().String(), "target", what)
			}
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.forwardConn(c, targetOf)
		}()
	}
}

// forwardConn carries the accepted connection c to the address targetOf names, as dialed by the
// other side. When there is none, or the other side refuses, c is reset: its client sees an
// error, not the end of an empty answer. When the session has ended, c is closed like every
// connection the session carried.
func (s *Session) forwardConn(c net.Conn, targetOf func(net.Conn) (string, error)) {
	target, err := targetOf(c)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.handshake)
		var st net.Conn
		st, err = s.Dial(ctx, target)
		cancel()
		if err == nil {
			s.pipe(c, st, target)
			return
		}
	}
	if s.mux.IsClosed() {
		_ = c.Close()
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // Close sends a reset
	}
	_ = c.Close()
	s.log.Error(err, "Cannot forward connection", "from", c.RemoteAddr().String(), "target", target)
}

// acceptStreams serves the streams the other side opens.
func (s *Session) acceptStreams() {
	defer s.wg.Done()
	for {
		st, err := s.mux.AcceptStream()
		if err != nil {
			return // the session ended; monitor cleans up
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveStream(st)
		}()
	}
}

// serveStream reads a stream's header, dials the requested local address if allowed, answers,
// and then carries the connection.
func (s *Session) serveStream(st *yamux.Stream) {
	_ = st.SetDeadline(time.Now().Add(s.handshake))
	target, err := readLine(st)
	if err != nil {
		_ = st.Close()
		if !s.isClosed() {
			s.log.Error(err, "Bad stream header")
		}
		return
	}
	c, err := s.dialLocal(target)
	if err != nil {
		_ = writeReply(st, err)
		_ = st.Close()
		s.log.Error(err, "Refused stream", "target", target)
		return
	}
	if err := writeReply(st, nil); err != nil {
		_ = c.Close()
		_ = st.Close()
		s.log.Error(err, "Cannot answer stream", "target", target)
		return
	}
	_ = st.SetDeadline(time.Time{})
	s.pipe(c, st, target)
}

// dialLocal dials target for the other side if the policy allows it.
func (s *Session) dialLocal(target string) (net.Conn, error) {
	ap, err := parseIPPort(target, false)
	if err != nil {
		return nil, err
	}
	canon := ap.String()
	local := ap.Addr().IsLoopback() ||
		slices.ContainsFunc(s.allowNets, func(p netip.Prefix) bool { return p.Contains(ap.Addr()) })
	switch {
	case !local:
		return nil, fmt.Errorf("address %q: %w", target, ErrNotLoopback)
	case ap.Addr().IsLoopback() && s.allow != nil && !s.allow[canon]:
		return nil, fmt.Errorf("address %s is not in the allowed list", canon)
	}
	d := net.Dialer{Timeout: s.dialTimeout}
	c, err := d.Dial("tcp", canon)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", canon, err)
	}
	return c, nil
}

// pipe copies between a local connection and a stream until both directions are done,
// propagating half-closes both ways. It closes both when it returns.
func (s *Session) pipe(local net.Conn, st net.Conn, target string) {
	s.log.V(1).Info("Connection open", "target", target)
	upErr := make(chan error, 1)
	finished := make(chan struct{})
	s.wg.Add(2)
	go func() { // local → stream; Close sends the stream's FIN
		defer s.wg.Done()
		_, err := io.Copy(st, local)
		_ = st.Close()
		upErr <- err
	}()
	go func() { // the session ending aborts the local side
		defer s.wg.Done()
		select {
		case <-s.mux.CloseChan():
			abort(local)
		case <-finished:
		}
	}()
	_, downErr := io.Copy(local, st)
	if downErr == nil {
		downErr = closeWrite(local)
	}
	if downErr != nil {
		abort(local) // ends the upstream copy too
		// Keep reading so the other side is never stuck on flow control; the stream ends
		// when the other side closes it too, or with the session.
		_, _ = io.Copy(io.Discard, st)
	}
	err := <-upErr
	close(finished)
	_ = local.Close()
	_ = st.Close()
	if !s.isClosed() {
		for _, e := range []error{downErr, err} {
			if !isClosedErr(e) {
				s.log.Error(e, "Bridged connection failed", "target", target)
			}
		}
	}
	s.log.V(1).Info("Connection closed", "target", target)
}

// recordingConn remembers the first error of the underlying line.
type recordingConn struct {
	io.ReadWriteCloser
	mu    sync.Mutex
	first error
}

func (c *recordingConn) record(err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	if c.first == nil {
		c.first = err
	}
	c.mu.Unlock()
}

func (c *recordingConn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.ReadWriteCloser.Read(p)
	c.record(err)
	return n, err
}

func (c *recordingConn) Write(p []byte) (int, error) {
	n, err := c.ReadWriteCloser.Write(p)
	c.record(err)
	return n, err
}

// muxConfig is the yamux configuration of a bridge session, logging to l.
func muxConfig(l logr.Logger) *yamux.Config {
	cfg := yamux.DefaultConfig()
	// The line is a local socketpair: a dead peer closes it. Keepalive pings would only end the
	// sessions of a single-CPU guest that is busy for a few seconds.
	cfg.EnableKeepAlive = false
	cfg.ConnectionWriteTimeout = time.Minute
	// A half-closed stream keeps receiving for as long as the other side sends, as a TCP
	// connection does after shutdown(SHUT_WR). yamux's default (5 min) resets a stream that long
	// after its Close whatever still flows: it cut a 256 MiB transfer between two nodes whose
	// client had sent its request and half-closed (at 0.5 MB/s, after 132 MiB).
	cfg.StreamCloseTimeout = 0
	cfg.LogOutput = nil
	cfg.Logger = log.New(yamuxLog{l}, "", 0)
	return cfg
}

// yamuxLog routes yamux's log lines to a logr.Logger at V(1); the errors that matter surface
// through Session.Wait and the per-connection logs.
type yamuxLog struct{ log logr.Logger }

func (y yamuxLog) Write(p []byte) (int, error) {
	y.log.V(1).Info("Yamux", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}
