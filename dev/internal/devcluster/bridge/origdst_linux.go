package bridge

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// originalDst returns where the accepted IPv4 TCP connection c was headed before netfilter's NAT
// (DNAT or REDIRECT) sent it to this listener: getsockopt SO_ORIGINAL_DST, answered from the
// connection's conntrack entry. A connection that was not translated reports its own local
// address.
func originalDst(c net.Conn) (netip.AddrPort, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%T has no socket", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("original destination: %w", err)
	}
	var dst netip.AddrPort
	var opErr error
	err = raw.Control(func(fd uintptr) {
		// The kernel fills a struct sockaddr_in (16 bytes); IPv6Mreq is a 20-byte buffer the
		// x/sys getsockopt wrappers offer: family (2 bytes), port (2, big-endian), address (4).
		var mreq *unix.IPv6Mreq
		mreq, opErr = unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, unix.SO_ORIGINAL_DST)
		if opErr != nil {
			return
		}
		sa := mreq.Multiaddr
		port := binary.BigEndian.Uint16(sa[2:4])
		dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(sa[4:8])), port)
	})
	if err == nil {
		err = opErr
	}
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("getsockopt SO_ORIGINAL_DST: %w", err)
	}
	return dst, nil
}
