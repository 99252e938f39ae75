package thinmeta

import (
	"errors"
	"fmt"
)

// Range is a byte range of a thin volume: [Offset, Offset+Length).
type Range struct {
	Offset uint64
	Length uint64
}

// End is the first byte after r.
func (r Range) End() uint64 { return r.Offset + r.Length }

// String renders r as offset+length.
func (r Range) String() string { return fmt.Sprintf("%d+%d", r.Offset, r.Length) }

// ErrStop is what a range callback returns to end the listing early without an
// error: Delta and Allocated then return nil.
var ErrStop = errors.New("stop listing ranges")

// merger joins adjacent ranges before handing them on and checks that the
// input is in increasing order without overlaps.
type merger struct {
	emit    func(Range) error
	pending Range
	have    bool
}

func (m *merger) add(r Range) error {
	if r.Length == 0 {
		return nil
	}
	if m.have {
		switch {
		case r.Offset < m.pending.End():
			return fmt.Errorf("%w: range %s starts before the end of %s", ErrMalformed, r, m.pending)
		case r.Offset == m.pending.End():
			m.pending.Length += r.Length
			return nil
		}
		if err := m.emit(m.pending); err != nil {
			return err
		}
	}
	m.pending, m.have = r, true
	return nil
}

func (m *merger) flush() error {
	if !m.have {
		return nil
	}
	m.have = false
	return m.emit(m.pending)
}

// StartingAt returns a callback that passes on to fn only what lies at or
// after offset aligned down to blockSize (CSI starting_offset: the first range
// returned must end after it). A range that straddles that point is cut there;
// ranges before it are skipped. blockSize 0 or 1 cuts at offset exactly.
func StartingAt(offset, blockSize uint64, fn func(Range) error) func(Range) error {
	if blockSize > 1 {
		offset -= offset % blockSize
	}
	return func(r Range) error {
		if r.End() <= offset {
			return nil
		}
		if r.Offset < offset {
			r = Range{Offset: offset, Length: r.End() - offset}
		}
		return fn(r)
	}
}

// Batcher groups ranges into slices of at most Max for one response message
// each (CSI max_results). Add it as the range callback and call Flush after
// the listing.
type Batcher struct {
	// Max is the most ranges per batch; values below 1 mean 1.
	Max int
	// Send receives each full batch; it must not keep the slice.
	Send  func([]Range) error
	batch []Range
}

// Add appends r and sends the batch when it is full.
func (b *Batcher) Add(r Range) error {
	limit := max(b.Max, 1)
	if b.batch == nil {
		b.batch = make([]Range, 0, min(limit, 1024))
	}
	b.batch = append(b.batch, r)
	if len(b.batch) < limit {
		return nil
	}
	return b.send()
}

// Flush sends what is left, if anything.
func (b *Batcher) Flush() error {
	if len(b.batch) == 0 {
		return nil
	}
	return b.send()
}

func (b *Batcher) send() error {
	err := b.Send(b.batch)
	b.batch = b.batch[:0]
	return err
}
