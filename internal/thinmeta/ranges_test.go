package thinmeta

import (
	"errors"
	"slices"
	"testing"
)

func TestStartingAt(t *testing.T) {
	in := []Range{{0, 10}, {20, 10}, {40, 10}}
	tests := []struct {
		name              string
		offset, blockSize uint64
		want              []Range
	}{
		{"zero", 0, 1, in},
		{"inside the first", 5, 1, []Range{{5, 5}, {20, 10}, {40, 10}}},
		{"at an end", 10, 1, []Range{{20, 10}, {40, 10}}},
		{"in a gap", 35, 1, []Range{{40, 10}}},
		{"straddles, block aligned", 25, 4, []Range{{24, 6}, {40, 10}}},
		{"past the last", 50, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []Range
			fn := StartingAt(tc.offset, tc.blockSize, func(r Range) error { got = append(got, r); return nil })
			for _, r := range in {
				if err := fn(r); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBatcher(t *testing.T) {
	var sent [][]Range
	b := &Batcher{Max: 2, Send: func(rs []Range) error { sent = append(sent, slices.Clone(rs)); return nil }}
	for i := range uint64(5) {
		if err := b.Add(Range{i * 10, 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil || len(sent) != 3 || len(sent[2]) != 1 || sent[1][0].Offset != 20 {
		t.Errorf("batches %v", sent)
	}
	boom := errors.New("boom")
	b = &Batcher{Send: func([]Range) error { return boom }}
	if err := b.Add(Range{0, 1}); !errors.Is(err, boom) {
		t.Errorf("Add with Max 0 = %v, want the send error at once", err)
	}
}

func TestMerger(t *testing.T) {
	var got []Range
	m := merger{emit: func(r Range) error { got = append(got, r); return nil }}
	for _, r := range []Range{{0, 1}, {1, 2}, {3, 0}, {5, 1}, {6, 1}} {
		if err := m.add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.flush(); err != nil || !slices.Equal(got, []Range{{0, 3}, {5, 2}}) {
		t.Errorf("merged %v, %v", got, err)
	}
	if err := m.add(Range{10, 2}); err != nil {
		t.Fatal(err)
	}
	if err := m.add(Range{11, 1}); !errors.Is(err, ErrMalformed) {
		t.Errorf("overlap: %v", err)
	}
}
