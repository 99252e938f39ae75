package transfer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
)

// ReaderSource is a Source reading a local device or file (the source node's snapshot).
type ReaderSource struct {
	R io.ReaderAt
}

// ReadChunk implements Source.
func (s ReaderSource) ReadChunk(_ context.Context, r Range, buf []byte) ([]byte, [sha256.Size]byte, error) {
	if uint64(len(buf)) < r.Length {
		return nil, [sha256.Size]byte{}, fmt.Errorf("chunk %s is larger than the buffer (%d bytes)", r, len(buf))
	}
	data := buf[:r.Length]
	if err := readFull(s.R, data, r.Offset); err != nil {
		return nil, [sha256.Size]byte{}, err
	}
	return data, sha256.Sum256(data), nil
}

// readFull fills p from r at off; io.EOF with p filled (the end of a file) is no error.
func readFull(r io.ReaderAt, p []byte, off uint64) error {
	n, err := r.ReadAt(p, int64(off))
	if n == len(p) && (err == nil || errors.Is(err, io.EOF)) {
		return nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return err
}
