package transfer

import (
	"errors"
	"io"
)

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
