package bridge

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

const noCTTY = unix.O_NOCTTY

// makeRaw puts the terminal f in raw mode like cfmakeraw(3): no input or output translation, no
// echo, no line editing or signals, no software flow control, 8 data bits without parity, reads
// return as soon as a byte is there. It then discards input received before.
func makeRaw(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("raw mode: %w", err)
	}
	var opErr error
	err = rc.Control(func(fd uintptr) {
		t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		if err != nil {
			opErr = fmt.Errorf("get termios: %w", err)
			return
		}
		t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR |
			unix.ICRNL | unix.IXON | unix.IXOFF | unix.IXANY
		t.Oflag &^= unix.OPOST
		t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
		t.Cflag &^= unix.CSIZE | unix.PARENB | unix.CRTSCTS
		t.Cflag |= unix.CS8 | unix.CREAD | unix.CLOCAL
		t.Cc[unix.VMIN] = 1
		t.Cc[unix.VTIME] = 0
		if err := unix.IoctlSetTermios(int(fd), unix.TCSETS, t); err != nil {
			opErr = fmt.Errorf("set termios: %w", err)
			return
		}
		if err := unix.IoctlSetInt(int(fd), unix.TCFLSH, unix.TCIFLUSH); err != nil {
			opErr = fmt.Errorf("flush input: %w", err)
		}
	})
	if err != nil {
		return fmt.Errorf("raw mode: %w", err)
	}
	return opErr
}
