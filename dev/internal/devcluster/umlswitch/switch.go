// Package umlswitch is an Ethernet switch for User-mode Linux guests on one host, speaking the
// protocol of UML's "daemon" network transport (the one uml_switch serves): the guests of the
// dev cluster get one network between them (eth0=daemon,MAC,unix,CTL) without a tap device, a
// bridge or any address on the host. Frames travel as unix datagrams between the guests' kernels
// and this process; nothing of it is an IP socket.
//
// The protocol (arch/um/drivers/daemon_user.c): a guest connects to the control socket (a unix
// stream socket at a path), sends a request {magic 0xfeedface, version 3, type 0 (new control),
// the sockaddr_un of its own data socket} and reads back the sockaddr_un of the switch's data
// socket; from then on it sends each frame as one datagram to that address and receives frames
// on its own. A guest's port lives as long as its control connection.
package umlswitch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

const (
	switchMagic   = 0xfeedface
	switchVersion = 3
	reqNewControl = 0
	// sunPathLen is the size of sockaddr_un.sun_path on Linux; a guest binds, sends to and
	// expects addresses of the full size (abstract names padded with NULs).
	sunPathLen = 108
	// sockaddrLen is sizeof(struct sockaddr_un): family (2 bytes) and the path.
	sockaddrLen = 2 + sunPathLen
	// requestLen is sizeof(struct request_v3): magic, version, type, sockaddr_un, padded to 4.
	requestLen = 12 + sockaddrLen + 2
	// maxFrame is larger than any frame a guest sends (MTU 1500 and the Ethernet header).
	maxFrame = 1 << 16
	// sendTimeout bounds how long a frame waits for room in a guest's socket queue.
	sendTimeout = time.Second
)

// KernelArg is the UML command-line argument that attaches the guest's interface ethN (with
// the given MAC address) to the switch whose control socket is at ctl.
func KernelArg(iface int, mac net.HardwareAddr, ctl string) string {
	return fmt.Sprintf("eth%d=daemon,%s,unix,%s", iface, mac, ctl)
}

// Switch is a learning Ethernet switch: a frame goes to the port its destination address was
// last seen on, or to every other port when that is unknown or a broadcast/multicast address.
type Switch struct {
	ctl *net.UnixListener
	log logr.Logger
	// tag makes the switch's abstract data socket names unique on the host.
	tag string

	mu     sync.Mutex
	ports  map[*port]struct{}
	macs   map[[6]byte]*port
	next   int
	closed bool

	wg      sync.WaitGroup
	frames  atomic.Uint64
	dropped atomic.Uint64
}

// port is one guest interface: the datagram socket the guest sends its frames to, and the
// address of the guest's own data socket.
type port struct {
	id    int
	ctl   net.Conn
	data  *net.UnixConn
	guest *net.UnixAddr
}

// Listen creates the control socket at path (removing a stale one) and serves guests until
// Close.
func Listen(path string, log logr.Logger) (*Switch, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale switch socket %s: %w", path, err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("switch control socket: %w", err)
	}
	s := &Switch{
		ctl: ln, log: log, tag: fmt.Sprintf("lvms-umlswitch-%d-%p", os.Getpid(), ln),
		ports: map[*port]struct{}{}, macs: map[[6]byte]*port{},
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Stats are the frames forwarded and dropped (a port's send failed) since Listen.
func (s *Switch) Stats() (frames, dropped uint64) { return s.frames.Load(), s.dropped.Load() }

// Close stops the switch: the control socket, every port, and waits for their goroutines.
func (s *Switch) Close() error {
	s.mu.Lock()
	s.closed = true
	ports := make([]*port, 0, len(s.ports))
	for p := range s.ports {
		ports = append(ports, p)
	}
	s.mu.Unlock()
	err := s.ctl.Close()
	for _, p := range ports {
		p.close()
	}
	s.wg.Wait()
	return err
}

func (s *Switch) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ctl.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Error(err, "Switch stopped accepting guests")
			}
			return
		}
		p, err := s.attach(c)
		if err != nil {
			s.log.Error(err, "Guest not attached")
			_ = c.Close()
			continue
		}
		s.wg.Add(2)
		go s.forward(p)
		go s.watch(p)
	}
}

// attach reads a guest's request, opens its port and answers with the port's data address.
func (s *Switch) attach(c net.Conn) (*port, error) {
	req := make([]byte, requestLen)
	if _, err := io.ReadFull(c, req[:12+sockaddrLen]); err != nil {
		return nil, fmt.Errorf("read request: %w", err)
	}
	guest, err := parseRequest(req)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, net.ErrClosed
	}
	s.next++
	id := s.next
	s.mu.Unlock()
	name := fmt.Sprintf("%s-%d", s.tag, id)
	data, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: abstractName(name), Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("data socket of port %d: %w", id, err)
	}
	// The port is in place before the guest learns its address: its first frame has somewhere
	// to go, and frames for it are delivered from then on.
	p := &port{id: id, ctl: c, data: data, guest: guest}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = data.Close()
		return nil, net.ErrClosed
	}
	s.ports[p] = struct{}{}
	s.mu.Unlock()
	if _, err := c.Write(sockaddr(name)); err != nil {
		s.detach(p)
		return nil, fmt.Errorf("answer guest: %w", err)
	}
	s.log.V(1).Info("Guest attached", "port", id)
	return p, nil
}

// parseRequest checks a request_v3 and returns the guest's data address.
func parseRequest(req []byte) (*net.UnixAddr, error) {
	if len(req) < 12+sockaddrLen {
		return nil, fmt.Errorf("request of %d bytes is too short", len(req))
	}
	le := binary.LittleEndian
	if m := le.Uint32(req[0:]); m != switchMagic {
		return nil, fmt.Errorf("request magic %#x, want %#x", m, uint32(switchMagic))
	}
	if v := le.Uint32(req[4:]); v != switchVersion {
		return nil, fmt.Errorf("request version %d, want %d", v, switchVersion)
	}
	if t := le.Uint32(req[8:]); t != reqNewControl {
		return nil, fmt.Errorf("request type %d, want %d (new control)", t, reqNewControl)
	}
	if f := le.Uint16(req[12:]); f != 1 { // AF_UNIX
		return nil, fmt.Errorf("guest data socket of family %d, want AF_UNIX", f)
	}
	path := req[14 : 14+sunPathLen]
	if path[0] != 0 {
		// A path name ends at its NUL; the kernel ignores what follows.
		name, _, _ := strings.Cut(string(path), "\x00")
		return &net.UnixAddr{Name: name, Net: "unixgram"}, nil
	}
	// An abstract name is all 108 bytes; Go writes "@" for the leading NUL.
	return &net.UnixAddr{Name: "@" + string(path[1:]), Net: "unixgram"}, nil
}

// abstractName is the Go form of the abstract address name padded to the full sun_path, the
// only form of it a guest can send to.
func abstractName(name string) string {
	return "@" + name + strings.Repeat("\x00", sunPathLen-1-len(name))
}

// sockaddr is the struct sockaddr_un of the abstract address name, as a guest reads it.
func sockaddr(name string) []byte {
	b := make([]byte, sockaddrLen)
	binary.LittleEndian.PutUint16(b, 1) // AF_UNIX
	copy(b[3:], name)
	return b
}

// watch removes the port when the guest closes its control connection (it ended).
func (s *Switch) watch(p *port) {
	defer s.wg.Done()
	_, _ = io.Copy(io.Discard, p.ctl)
	s.detach(p)
}

func (s *Switch) detach(p *port) {
	s.mu.Lock()
	_, ok := s.ports[p]
	delete(s.ports, p)
	for mac, q := range s.macs {
		if q == p {
			delete(s.macs, mac)
		}
	}
	s.mu.Unlock()
	p.close()
	if ok {
		s.log.V(1).Info("Guest detached", "port", p.id)
	}
}

func (p *port) close() {
	_ = p.ctl.Close()
	_ = p.data.Close()
}

// forward reads the guest's frames and sends each where it belongs.
func (s *Switch) forward(p *port) {
	defer s.wg.Done()
	defer s.detach(p)
	buf := make([]byte, maxFrame)
	var out []*port
	for {
		n, err := p.data.Read(buf)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Error(err, "Port stopped", "port", p.id)
			}
			return
		}
		if n < 14 { // shorter than an Ethernet header
			s.dropped.Add(1)
			continue
		}
		out = s.route(p, buf[:n], out[:0])
		for _, q := range out {
			// The send to q's guest goes out of q's own socket (a guest does not check where a
			// frame came from). A guest that stops reading (stopped, or its queue full for a
			// second) loses the frame, as on a real wire, instead of holding up this port.
			_ = q.data.SetWriteDeadline(time.Now().Add(sendTimeout))
			if _, err := q.data.WriteToUnix(buf[:n], q.guest); err != nil {
				s.dropped.Add(1)
				continue
			}
			s.frames.Add(1)
		}
	}
}

// route learns the frame's source address on port from and returns the ports it goes to.
func (s *Switch) route(from *port, frame []byte, out []*port) []*port {
	var dst, src [6]byte
	copy(dst[:], frame[0:6])
	copy(src[:], frame[6:12])
	s.mu.Lock()
	defer s.mu.Unlock()
	if src[0]&1 == 0 {
		s.macs[src] = from
	}
	if dst[0]&1 == 0 {
		if q, ok := s.macs[dst]; ok {
			if q != from {
				out = append(out, q)
			}
			return out
		}
	}
	for q := range s.ports {
		if q != from {
			out = append(out, q)
		}
	}
	return out
}
