package thinmeta

import (
	"encoding/xml"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const chunk64k = 64 << 10

func blocks(pairs ...uint64) []Range {
	var out []Range
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Range{Offset: pairs[i] * chunk64k, Length: pairs[i+1] * chunk64k})
	}
	return out
}

func collectFn() (*[]Range, func(Range) error) {
	var out []Range
	return &out, func(r Range) error { out = append(out, r); return nil }
}

func TestDecodeDelta(t *testing.T) {
	tests := []struct {
		name, file, xml string
		blockSize       uint64
		want            []Range
		err             error
	}{
		// thin_delta 0.9.0 output from the guest (data_block_size 128 sectors = 64 KiB).
		{name: "plain", file: "delta-0.9.0.xml", blockSize: chunk64k, want: blocks(11, 2, 100, 1, 200, 1)},
		{name: "verbose", file: "delta-verbose-0.9.0.xml", want: blocks(11, 2, 100, 1, 200, 1)},
		{name: "left_only counts", file: "delta-left-only-0.9.0.xml", want: blocks(11, 2, 100, 1, 200, 1)},
		{name: "wrong block size", file: "delta-0.9.0.xml", blockSize: 1 << 20, err: ErrMalformed},
		{name: "adjacent kinds merge", xml: `<superblock data_block_size="2048"><diff left="1" right="2">
			<different begin="0" length="2"/><right_only begin="2" length="1"/><left_only begin="3" length="1"/>
			<same begin="4" length="1"/><different begin="5" length="1"/></diff></superblock>`,
			want: []Range{{0, 4 << 20}, {5 << 20, 1 << 20}}},
		{name: "empty diff", xml: `<superblock data_block_size="128"><diff left="1" right="2"></diff></superblock>`},
		{name: "no diff", xml: `<superblock data_block_size="128"></superblock>`, err: ErrMalformed},
		{name: "empty", xml: ``, err: ErrMalformed},
		{name: "not xml", xml: `Unable to find mapping tree`, err: ErrMalformed},
		{name: "truncated", xml: `<superblock data_block_size="128"><diff><different begin="1" length="1"/>`,
			err: ErrMalformed},
		{name: "out of order", xml: `<superblock data_block_size="128"><diff><different begin="5" length="2"/>
			<different begin="6" length="1"/></diff></superblock>`, err: ErrMalformed},
		{name: "overflow", xml: `<superblock data_block_size="128"><diff><different begin="18446744073709551615"
			length="1"/></diff></superblock>`, err: ErrMalformed},
		{name: "unknown element", xml: `<superblock data_block_size="128"><diff><moved begin="1" length="1"/>
			</diff></superblock>`, err: ErrMalformed},
		{name: "diff before superblock", xml: `<diff><different begin="1" length="1"/></diff>`, err: ErrMalformed},
		{name: "bad number", xml: `<superblock data_block_size="128"><diff><different begin="x" length="1"/>
			</diff></superblock>`, err: ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.xml
			if tc.file != "" {
				b, err := os.ReadFile("testdata/" + tc.file)
				if err != nil {
					t.Fatal(err)
				}
				in = string(b)
			}
			got, fn := collectFn()
			err := DecodeDelta(strings.NewReader(in), tc.blockSize, fn)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if tc.err == nil && !slices.Equal(*got, tc.want) {
				t.Errorf("ranges = %v, want %v", *got, tc.want)
			}
		})
	}
}

func TestDecodeMappings(t *testing.T) {
	tests := []struct {
		name, file, xml string
		dev             uint64
		want            []Range
		err             error
	}{
		{name: "one device", file: "dump-dev2-0.9.0.xml", dev: 2, want: blocks(10, 3, 100, 1)},
		{name: "among others", file: "dump-all-0.9.0.xml", dev: 1, want: blocks(10, 3, 100, 1, 200, 1)},
		{name: "empty device", file: "dump-all-0.9.0.xml", dev: 4},
		// thin_dump 0.9.0 prints an empty superblock, exit 0, for an unknown --dev-id.
		{name: "missing device", file: "dump-missing-dev-0.9.0.xml", dev: 99, err: ErrNotFound},
		{name: "mapping outside device", xml: `<superblock data_block_size="128">
			<single_mapping origin_block="1" data_block="1"/></superblock>`, dev: 1, err: ErrNotFound},
		{name: "bad dev_id", xml: `<superblock data_block_size="128"><device dev_id="-1"></device></superblock>`,
			dev: 1, err: ErrMalformed},
		{name: "zero length", xml: `<superblock data_block_size="128"><device dev_id="1">
			<range_mapping origin_begin="1" length="0"/></device></superblock>`, dev: 1, err: ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.xml
			if tc.file != "" {
				b, err := os.ReadFile("testdata/" + tc.file)
				if err != nil {
					t.Fatal(err)
				}
				in = string(b)
			}
			got, fn := collectFn()
			err := DecodeMappings(strings.NewReader(in), tc.dev, chunk64k, fn)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if tc.err == nil && !slices.Equal(*got, tc.want) {
				t.Errorf("ranges = %v, want %v", *got, tc.want)
			}
		})
	}
}

// The callback's error ends decoding and comes back unchanged.
func TestDecodeCallbackError(t *testing.T) {
	b, err := os.ReadFile("testdata/delta-0.9.0.xml")
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	n := 0
	err = DecodeDelta(strings.NewReader(string(b)), 0, func(Range) error { n++; return boom })
	if !errors.Is(err, boom) || n != 1 {
		t.Errorf("err %v after %d calls", err, n)
	}
}

// checkRanges asserts the contract of every listing: non-empty, increasing,
// not overlapping, not adjacent (merged), block aligned.
func checkRanges(t *testing.T, rs []Range, blockSize uint64) {
	t.Helper()
	for i, r := range rs {
		if r.Length == 0 || r.Offset%blockSize != 0 || r.Length%blockSize != 0 || r.End() < r.Offset {
			t.Fatalf("range %d %v: empty, unaligned to %d or overflowing", i, r, blockSize)
		}
		if i > 0 && r.Offset <= rs[i-1].End() {
			t.Fatalf("range %d %v not after %v with a gap", i, r, rs[i-1])
		}
	}
}

func FuzzDecodeDelta(f *testing.F) {
	f.Add([]byte(`<superblock data_block_size="1"><diff><same begin="0" length="1"/></diff></superblock>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var rs []Range
		err := DecodeDelta(strings.NewReader(string(data)), 0, func(r Range) error {
			rs = append(rs, r)
			return nil
		})
		if err != nil {
			return
		}
		checkRanges(t, rs, blockSizeOf(t, data))
	})
}

func FuzzDecodeMappings(f *testing.F) {
	f.Add([]byte(`<superblock data_block_size="1"><device dev_id="2"></device></superblock>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var rs []Range
		err := DecodeMappings(strings.NewReader(string(data)), 2, 0, func(r Range) error {
			rs = append(rs, r)
			return nil
		})
		if err != nil {
			return
		}
		checkRanges(t, rs, blockSizeOf(t, data))
	})
}

// blockSizeOf reads data_block_size (in bytes) of a successfully decoded
// document.
func blockSizeOf(t *testing.T, data []byte) uint64 {
	t.Helper()
	x := xml.NewDecoder(strings.NewReader(string(data)))
	for {
		tok, err := x.Token()
		if err != nil {
			t.Fatalf("decoded document without a superblock: %v", err)
		}
		if s, ok := tok.(xml.StartElement); ok && s.Name.Local == "superblock" {
			v, _ := attr(s, "data_block_size")
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n * sectorSize
		}
	}
}
