package bridge

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/yamux"
)

// Line preambles. The guest sends guestHello once its tty is raw; the host answers hostHello.
// Only then does either side speak yamux, so bytes written before the guest opened its tty (which
// UML drops) or left over from before raw mode never reach the multiplexer.
const (
	guestHello = "\nLVMS-BRIDGE/1 GUEST\n"
	hostHello  = "\nLVMS-BRIDGE/1 HOST\n"
	// maxPreamble bounds the noise skipped before a hello.
	maxPreamble = 1 << 20
	// maxHeader bounds a stream header or reply line.
	maxHeader = 512
)

// ErrNotLoopback is returned for addresses that are not loopback IP literals (or, where
// Options.AllowNets applies, not in one of those networks either).
var ErrNotLoopback = errors.New("not a loopback IP address")

// ErrRefused wraps the reason the other side gave for not connecting a stream.
var ErrRefused = errors.New("refused by the other side of the bridge")

// ErrClosed is returned by operations on a closed Session.
var ErrClosed = errors.New("bridge session closed")

// awaitToken reads r one byte at a time until it has seen token, skipping at most limit bytes
// of anything else. It never reads past the token.
func awaitToken(r io.Reader, token string, limit int) error {
	window := make([]byte, 0, len(token))
	b := make([]byte, 1)
	for n := 0; n < limit+len(token); {
		k, err := r.Read(b)
		if k == 1 {
			n++
			if len(window) == len(token) {
				window = append(window[:0], window[1:]...)
			}
			window = append(window, b[0])
			if string(window) == token {
				return nil
			}
		}
		if err != nil {
			return fmt.Errorf("wait for %q: %w", strings.TrimSpace(token), err)
		}
	}
	return fmt.Errorf("wait for %q: not seen in the first %d bytes", strings.TrimSpace(token), limit)
}

// readLine reads one "\n"-terminated line of at most maxHeader bytes, one byte at a time so
// that nothing after it is consumed.
func readLine(r io.Reader) (string, error) {
	var line []byte
	b := make([]byte, 1)
	for len(line) <= maxHeader {
		k, err := r.Read(b)
		if k == 1 {
			if b[0] == '\n' {
				return string(line), nil
			}
			line = append(line, b[0])
		}
		if err != nil {
			return "", fmt.Errorf("read line after %q: %w", line, err)
		}
	}
	return "", fmt.Errorf("line longer than %d bytes", maxHeader)
}

// writeHeader opens a stream: it names the address the other side is asked to dial.
func writeHeader(w io.Writer, target string) error {
	if strings.ContainsAny(target, "\n") || len(target) > maxHeader {
		return fmt.Errorf("invalid target %q", target)
	}
	if _, err := io.WriteString(w, target+"\n"); err != nil {
		return fmt.Errorf("send stream header: %w", err)
	}
	return nil
}

// writeReply answers a stream header: "ok" or "error <reason>".
func writeReply(w io.Writer, cause error) error {
	line := "ok\n"
	if cause != nil {
		msg := strings.ReplaceAll(cause.Error(), "\n", " ")
		if len(msg) > maxHeader-8 {
			msg = msg[:maxHeader-8]
		}
		line = "error " + msg + "\n"
	}
	if _, err := io.WriteString(w, line); err != nil {
		return fmt.Errorf("send stream reply: %w", err)
	}
	return nil
}

// readReply reads the answer to a stream header; a refusal is returned wrapping ErrRefused.
func readReply(r io.Reader) error {
	line, err := readLine(r)
	if err != nil {
		return fmt.Errorf("read stream reply: %w", err)
	}
	if line == "ok" {
		return nil
	}
	if reason, ok := strings.CutPrefix(line, "error "); ok {
		return fmt.Errorf("%w: %s", ErrRefused, reason)
	}
	return fmt.Errorf("malformed stream reply %q", line)
}

// parseLoopback checks that addr is "ip:port" with a loopback IP literal (127.0.0.0/8 or ::1)
// and a numeric port; port 0 is accepted only when anyPort is set (for listeners). It returns
// the address in canonical form.
func parseLoopback(addr string, anyPort bool) (string, error) {
	ap, err := parseIPPort(addr, anyPort)
	if err != nil {
		return "", err
	}
	if !ap.Addr().IsLoopback() {
		return "", fmt.Errorf("address %q: %w", addr, ErrNotLoopback)
	}
	return ap.String(), nil
}

// parseIPPort checks that addr is "ip:port" with an IP literal (never a host name, so no lookup
// ever happens) and a numeric port, 0 only when anyPort is set.
func parseIPPort(addr string, anyPort bool) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: %w", addr, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return netip.AddrPort{}, fmt.Errorf("address %q: %w", addr, ErrNotLoopback)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || (p == 0 && !anyPort) {
		return netip.AddrPort{}, fmt.Errorf("address %q: invalid port", addr)
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(p)), nil
}

// loopbackPort is the IPv4 loopback address with the given port.
func loopbackPort(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// closeWrite half-closes c when it supports that (TCP, Unix sockets), else closes it.
func closeWrite(c io.Closer) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// abort ends c in both directions at once and wakes its blocked calls. For a TCP connection that
// is Close; a bridge stream is also woken by the deadline, since its Close
// only ends the sending half.
func abort(c net.Conn) {
	_ = c.SetDeadline(time.Now())
	_ = c.Close()
}

// isClosedErr reports errors that only say a connection is gone.
func isClosedErr(err error) bool {
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.ErrClosedPipe) || errors.Is(err, yamux.ErrSessionShutdown) ||
		errors.Is(err, yamux.ErrStreamClosed)
}
