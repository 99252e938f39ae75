package bridge

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Framing of the credit layer: every frame is [type byte][uint16 big-endian length][payload].
// A data frame carries length bytes of the stream; a credit frame has no payload and returns
// length bytes of window to the sender.
const (
	frameData   = 'D'
	frameCredit = 'C'

	frameHeader = 3
	// maxFrameData is the largest payload of a data frame.
	maxFrameData = 1024
	// DefaultLineWindow is how many bytes a side may have sent over the line and not yet seen
	// consumed by the other side.
	DefaultLineWindow = 2048
	// maxLineWindow is the largest window a credit frame can express; each side picks its own
	// sending window, so a receiver only checks against this.
	maxLineWindow = 0xffff
)

// errCreditClosed is returned by the operations of a closed creditConn.
var errCreditClosed = errors.New("bridge line closed")

// creditConn is credit-based flow control over a line, beneath yamux: the sender never has more
// than window bytes on the line that the receiving side's consumer has not read yet, so the
// receiving tty's buffers never fill up (UML's serial line stops delivering when they do).
//
// A goroutine reads frames from the line into a buffer that never holds more than window
// bytes; Read takes bytes from that buffer and returns credit for them. Write splits data into
// frames and waits for credit. It is safe for one reader and any number of writers at once.
type creditConn struct {
	line   io.ReadWriteCloser
	window int

	writeMu sync.Mutex // serialises frames on the line
	mu      sync.Mutex
	cond    *sync.Cond // signalled when any of the fields below changes
	buf     []byte     // received, not yet read
	unacked int        // sent, not yet credited by the other side
	readErr error      // why the frame reader stopped
	closed  bool

	closeOnce sync.Once
	closeErr  error
	done      chan struct{} // closed when the frame reader has ended

	// onSend, when set, is called with the bytes in flight after each data frame (tests).
	onSend func(inFlight int)
}

// newCreditConn wraps line; window ≤ 0 means DefaultLineWindow. It starts the frame reader,
// which ends when line does.
func newCreditConn(line io.ReadWriteCloser, window int) *creditConn {
	if window <= 0 {
		window = DefaultLineWindow
	}
	window = min(window, maxLineWindow)
	c := &creditConn{line: line, window: window, done: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	go c.readFrames()
	return c
}

// readFrames moves data frames into buf and applies credit frames until the line fails.
func (c *creditConn) readFrames() {
	defer close(c.done)
	var hdr [frameHeader]byte
	for {
		if _, err := io.ReadFull(c.line, hdr[:]); err != nil {
			c.fail(err)
			return
		}
		n := int(binary.BigEndian.Uint16(hdr[1:]))
		switch hdr[0] {
		case frameCredit:
			c.mu.Lock()
			c.unacked = max(c.unacked-n, 0)
			c.cond.Broadcast()
			c.mu.Unlock()
		case frameData:
			if err := c.readData(n); err != nil {
				c.fail(err)
				return
			}
		default:
			c.fail(fmt.Errorf("bridge line: unknown frame type %#x", hdr[0]))
			return
		}
	}
}

// readData appends the n-byte payload of a data frame to buf.
func (c *creditConn) readData(n int) error {
	c.mu.Lock()
	over := len(c.buf)+n > maxLineWindow
	c.mu.Unlock()
	if over || n > maxFrameData {
		return fmt.Errorf("bridge line: peer sent a %d-byte frame beyond any window", n)
	}
	var payload [maxFrameData]byte
	if _, err := io.ReadFull(c.line, payload[:n]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	c.mu.Lock()
	c.buf = append(c.buf, payload[:n]...)
	c.cond.Broadcast()
	c.mu.Unlock()
	return nil
}

// fail records why the frame reader stopped and wakes everybody waiting.
func (c *creditConn) fail(err error) {
	c.mu.Lock()
	if c.readErr == nil {
		c.readErr = err
	}
	c.cond.Broadcast()
	c.mu.Unlock()
}

// Read returns received bytes, then the line's error once they are used up, and gives the
// other side credit for what it returns.
func (c *creditConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	for len(c.buf) == 0 && c.readErr == nil && !c.closed {
		c.cond.Wait()
	}
	if len(c.buf) == 0 {
		err := c.readErr
		if c.closed {
			err = errCreditClosed
		}
		c.mu.Unlock()
		return 0, err
	}
	n := copy(p, c.buf)
	c.buf = c.buf[:copy(c.buf, c.buf[n:])]
	c.mu.Unlock()
	// The bytes are delivered either way; a line that cannot take the credit has failed, and
	// the frame reader reports that once the buffered bytes are read.
	_ = c.writeFrame(frameCredit, n, nil)
	return n, nil
}

// Write sends p in data frames, waiting for credit whenever the window is used up.
func (c *creditConn) Write(p []byte) (int, error) {
	sent := 0
	for sent < len(p) {
		n, err := c.reserve(len(p) - sent)
		if err != nil {
			return sent, err
		}
		if err := c.writeFrame(frameData, n, p[sent:sent+n]); err != nil {
			return sent, err
		}
		sent += n
	}
	return sent, nil
}

// reserve waits until there is window left and takes up to want bytes (at most one frame) of it.
func (c *creditConn) reserve(want int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.unacked >= c.window && c.readErr == nil && !c.closed {
		c.cond.Wait()
	}
	switch {
	case c.closed:
		return 0, errCreditClosed
	case c.readErr != nil:
		return 0, fmt.Errorf("bridge line: no credit, reader ended: %w", c.readErr)
	}
	n := min(want, maxFrameData, c.window-c.unacked)
	c.unacked += n
	if c.onSend != nil {
		c.onSend(c.unacked)
	}
	return n, nil
}

// writeFrame writes one frame: a header with n and, for data, the payload.
func (c *creditConn) writeFrame(typ byte, n int, payload []byte) error {
	var frame [frameHeader + maxFrameData]byte
	frame[0] = typ
	binary.BigEndian.PutUint16(frame[1:], uint16(n)) //nolint:gosec // n ≤ maxLineWindow
	m := frameHeader + copy(frame[frameHeader:], payload)
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.line.Write(frame[:m]); err != nil {
		return fmt.Errorf("bridge line write: %w", err)
	}
	return nil
}

// Close closes the line, wakes blocked readers and writers, and waits for the frame reader.
func (c *creditConn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.cond.Broadcast()
		c.mu.Unlock()
		c.closeErr = c.line.Close()
		<-c.done
	})
	return c.closeErr
}
