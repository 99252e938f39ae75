package uml

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// NewSerialLine makes a socketpair for a serial line: host is the host's end as a net.Conn (for
// the bridge, say), guest the end to hand UML as [SerialLine.File]. The caller closes both; the
// host side sees the line end once the guest end is closed and UML, which has the only other
// copy, has exited. name names the files in errors and /proc.
func NewSerialLine(name string) (host net.Conn, guest *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("serial line %s: %w", name, err)
	}
	hostFile := os.NewFile(uintptr(fds[0]), name+"-host")
	guest = os.NewFile(uintptr(fds[1]), name+"-guest")
	host, err = net.FileConn(hostFile)
	_ = hostFile.Close() // FileConn holds its own copy
	if err != nil {
		_ = guest.Close()
		return nil, nil, fmt.Errorf("serial line %s: %w", name, err)
	}
	return host, guest, nil
}
