package thinmeta

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
)

// sectorSize is the unit of the tools' data_block_size attribute.
const sectorSize = 512

// Range kinds printed by thin_delta 0.9 inside <diff>: same (both devices map
// the block to one data block), different (both map it, to different data
// blocks), left_only (only --snap1, the base, maps it: the target reads
// zeros there, e.g. after a discard) and right_only (only --snap2, the
// target, maps it). All but same are changes.
var deltaKinds = map[string]bool{"same": false, "different": true, "left_only": true, "right_only": true}

// DecodeDelta reads `thin_delta` XML (plain or --verbose) from r token by
// token and calls fn with every changed range in bytes, in increasing order,
// adjacent ranges merged. blockSize, if not 0, is the pool's chunk size in
// bytes and must match the output's data_block_size.
func DecodeDelta(r io.Reader, blockSize uint64, fn func(Range) error) error {
	d := newDecoder(r, blockSize, fn)
	kind := "" // the enclosing kind element of --verbose <range> elements
	sawDiff := false
	err := d.each(func(t xml.Token) error {
		switch t := t.(type) {
		case xml.StartElement:
			name := t.Name.Local
			switch {
			case name == "superblock":
				return d.superblock(t)
			case name == "diff":
				sawDiff = true
				return d.needBlockSize()
			case name == "range" && kind != "":
				return d.rangeOf(t, "begin", "length", deltaKinds[kind])
			case name == "range":
				return fmt.Errorf("%w: <range> outside a kind element", ErrMalformed)
			}
			changed, ok := deltaKinds[name]
			if !ok {
				return fmt.Errorf("%w: unexpected element <%s>", ErrMalformed, name)
			}
			if _, plain := attr(t, "begin"); plain {
				return d.rangeOf(t, "begin", "length", changed)
			}
			kind = name
		case xml.EndElement:
			if _, ok := deltaKinds[t.Name.Local]; ok {
				kind = ""
			}
		}
		return nil
	})
	if err == nil && !sawDiff {
		err = fmt.Errorf("%w: no <diff> element", ErrMalformed)
	}
	return err
}

// DecodeMappings reads `thin_dump` XML from r token by token and calls fn
// with the ranges thin device devID maps (range_mapping and single_mapping),
// in bytes, in increasing order, adjacent ranges merged. Other devices'
// mappings are skipped; a dump without device devID is ErrNotFound.
// blockSize is as for DecodeDelta.
func DecodeMappings(r io.Reader, devID, blockSize uint64, fn func(Range) error) error {
	d := newDecoder(r, blockSize, fn)
	inDev, found := false, false
	err := d.each(func(t xml.Token) error {
		switch t := t.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "superblock":
				return d.superblock(t)
			case "device":
				id, err := d.uintAttr(t, "dev_id")
				inDev = id == devID
				found = found || inDev
				if err != nil {
					return err
				}
				return d.needBlockSize()
			case "range_mapping":
				return d.rangeOf(t, "origin_begin", "length", inDev)
			case "single_mapping":
				return d.rangeOf(t, "origin_block", "", inDev)
			default:
				return fmt.Errorf("%w: unexpected element <%s>", ErrMalformed, t.Name.Local)
			}
		case xml.EndElement:
			if t.Name.Local == "device" {
				inDev = false
			}
		}
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("thin device %d: %w in the pool metadata", devID, ErrNotFound)
	}
	return err
}

// decoder holds the state shared by the two formats.
type decoder struct {
	x         *xml.Decoder
	want      uint64 // expected block size in bytes, 0 = any
	blockSize uint64 // from the superblock
	m         merger
}

func newDecoder(r io.Reader, want uint64, fn func(Range) error) *decoder {
	x := xml.NewDecoder(r)
	x.Strict = true
	return &decoder{x: x, want: want, m: merger{emit: fn}}
}

// each feeds every token to f, then flushes the merged ranges.
func (d *decoder) each(f func(xml.Token) error) error {
	for {
		t, err := d.x.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if err := f(t); err != nil {
			return err
		}
	}
	if d.blockSize == 0 {
		return fmt.Errorf("%w: no <superblock> element", ErrMalformed)
	}
	return d.m.flush()
}

func (d *decoder) superblock(t xml.StartElement) error {
	if d.blockSize != 0 {
		return fmt.Errorf("%w: second <superblock>", ErrMalformed)
	}
	sectors, err := d.uintAttr(t, "data_block_size")
	if err != nil {
		return err
	}
	hi, bs := bits.Mul64(sectors, sectorSize)
	if hi != 0 || bs == 0 {
		return fmt.Errorf("%w: data_block_size %d", ErrMalformed, sectors)
	}
	if d.want != 0 && bs != d.want {
		return fmt.Errorf("%w: data_block_size is %d bytes, the pool's chunk size %d", ErrMalformed, bs, d.want)
	}
	d.blockSize = bs
	return nil
}

func (d *decoder) needBlockSize() error {
	if d.blockSize == 0 {
		return fmt.Errorf("%w: data before <superblock>", ErrMalformed)
	}
	return nil
}

// rangeOf converts the block range in t's attributes begin and length (one
// block when length is "") to bytes and, if keep, hands it to the merger.
func (d *decoder) rangeOf(t xml.StartElement, begin, length string, keep bool) error {
	if err := d.needBlockSize(); err != nil {
		return err
	}
	b, err := d.uintAttr(t, begin)
	if err != nil {
		return err
	}
	n := uint64(1)
	if length != "" {
		if n, err = d.uintAttr(t, length); err != nil {
			return err
		}
	}
	hi1, off := bits.Mul64(b, d.blockSize)
	hi2, size := bits.Mul64(n, d.blockSize)
	if _, carry := bits.Add64(off, size, 0); hi1 != 0 || hi2 != 0 || carry != 0 || n == 0 {
		return fmt.Errorf("%w: <%s> %s=%d length=%d out of range", ErrMalformed, t.Name.Local, begin, b, n)
	}
	if !keep {
		return nil
	}
	return d.m.add(Range{Offset: off, Length: size})
}

func (d *decoder) uintAttr(t xml.StartElement, name string) (uint64, error) {
	v, ok := attr(t, name)
	if !ok {
		return 0, fmt.Errorf("%w: <%s> without %s", ErrMalformed, t.Name.Local, name)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: <%s %s=%q>", ErrMalformed, t.Name.Local, name, v)
	}
	return n, nil
}

func attr(t xml.StartElement, name string) (string, bool) {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}
