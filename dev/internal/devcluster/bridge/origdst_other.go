//go:build !linux

package bridge

import (
	"errors"
	"net"
	"net/netip"
)

// originalDst is only implemented on Linux, where guests run.
func originalDst(net.Conn) (netip.AddrPort, error) {
	return netip.AddrPort{}, errors.New("original destinations are only implemented on Linux")
}
