package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
)

// HostSession is the host side of a bridge.
type HostSession struct {
	*Session
}

// Host runs the host side of a bridge over line, the host end of the socketpair handed to the
// guest as a serial line. It waits until the guest side announces itself (bounded by ctx, which
// only covers this wait), then serves the guest's streams: each names a host address to dial,
// which must be a loopback IP literal and, when opts.Allow is set, listed there. Host takes
// ownership of line; it is closed with the session or when Host fails.
func Host(ctx context.Context, line net.Conn, opts Options) (*HostSession, error) {
	allow, err := opts.validate()
	if err != nil {
		_ = line.Close()
		return nil, err
	}
	err = handshake(ctx, line, func() error {
		if err := awaitToken(line, guestHello, maxPreamble); err != nil {
			return err
		}
		if _, err := io.WriteString(line, hostHello); err != nil {
			return fmt.Errorf("answer the guest: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bridge handshake with the guest: %w", err)
	}
	s, err := start(line, true, allow, opts)
	if err != nil {
		return nil, err
	}
	return &HostSession{Session: s}, nil
}

// DialGuest connects to the guest's 127.0.0.1:port.
func (h *HostSession) DialGuest(ctx context.Context, port int) (net.Conn, error) {
	return h.Dial(ctx, loopbackPort(port))
}

// Expose listens on the host's loopback address listen (port 0 picks one) and carries each
// connection to the guest's 127.0.0.1:guestPort. It returns the bound address.
func (h *HostSession) Expose(listen string, guestPort int) (net.Addr, error) {
	return h.Forward(listen, loopbackPort(guestPort))
}

// Guest runs the guest side of a bridge on the serial line tty (e.g. /dev/ttyS1): it opens the
// tty, puts it in raw mode and continues as GuestConn.
func Guest(ctx context.Context, tty string, opts Options) (*Session, error) {
	f, err := os.OpenFile(tty, os.O_RDWR|noCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open serial line: %w", err)
	}
	if err := makeRaw(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("serial line %s: %w", tty, err)
	}
	return GuestConn(ctx, f, opts)
}

// GuestConn runs the guest side of a bridge over line: it announces itself, waits for the host's
// answer (bounded by ctx, which only covers this wait), opens the listeners of opts.Forward and
// serves the host's streams, each naming a guest address to dial (a loopback IP literal and,
// when opts.Allow is set, listed there). GuestConn takes ownership of line.
func GuestConn(ctx context.Context, line io.ReadWriteCloser, opts Options) (*Session, error) {
	allow, err := opts.validate()
	if err != nil {
		_ = line.Close()
		return nil, err
	}
	err = handshake(ctx, line, func() error {
		if _, err := io.WriteString(line, guestHello); err != nil {
			return fmt.Errorf("announce the guest: %w", err)
		}
		return awaitToken(line, hostHello, maxPreamble)
	})
	if err != nil {
		return nil, fmt.Errorf("bridge handshake with the host: %w", err)
	}
	return start(line, false, allow, opts)
}

// handshake runs exchange on line, closing line when ctx ends first or exchange fails.
func handshake(ctx context.Context, line io.Closer, exchange func() error) error {
	stop := context.AfterFunc(ctx, func() { _ = line.Close() })
	err := exchange()
	if !stop() {
		err = errors.Join(ctx.Err(), err)
	}
	if err != nil {
		_ = line.Close()
		return err
	}
	return nil
}
