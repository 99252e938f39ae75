package transfer

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	transferpb "github.com/lvm-operator/lvm-operator/internal/transfer/proto"
)

// split cuts b into pieces of at most n bytes, as gRPC hands a message over in buffers of frames.
func split(b []byte, n int) mem.BufferSlice {
	var s mem.BufferSlice
	for len(b) > 0 {
		k := min(n, len(b))
		s = append(s, mem.SliceBuffer(b[:k]))
		b = b[k:]
	}
	return s
}

// decodeBoth decodes b with chunkCodec (in buffers of n bytes) and with proto; it fails the test when
// chunkCodec accepts what proto refuses or decodes it otherwise, and returns chunkCodec's result.
func decodeBoth(t *testing.T, c *chunkCodec, b []byte, n int) (*transferpb.Chunk, error) {
	t.Helper()
	got := &transferpb.Chunk{}
	err := c.Unmarshal(split(b, n), got)
	want := &transferpb.Chunk{}
	perr := proto.Unmarshal(b, want)
	switch {
	case err == nil && perr != nil:
		t.Fatalf("chunkCodec decoded %x, which proto refuses (%v)", b, perr)
	case err == nil && (got.GetOffset() != want.GetOffset() || !bytes.Equal(got.GetData(), want.GetData()) ||
		!bytes.Equal(got.GetSha256(), want.GetSha256())):
		t.Fatalf("%x: chunkCodec decoded offset %d, %d bytes, sum %x; proto offset %d, %d bytes, sum %x", b,
			got.GetOffset(), len(got.GetData()), got.GetSha256(), want.GetOffset(), len(want.GetData()),
			want.GetSha256())
	}
	return got, err
}

func TestChunkCodecDecodesWhatProtoEncodes(t *testing.T) {
	c := newChunkCodec(64, 2)
	data := bytes.Repeat([]byte{7}, 64)
	full, err := proto.Marshal(
		&transferpb.Chunk{Offset: 1 << 40, Data: data, Sha256: []byte("0123456789abcdef0123456789abcdef")},
	)
	if err != nil {
		t.Fatal(err)
	}
	// A field we do not know, and the data field twice (the last wins), as proto reads them.
	extra := protowire.AppendTag(nil, 9, protowire.BytesType)
	extra = protowire.AppendBytes(extra, []byte("future"))
	extra = protowire.AppendTag(extra, 2, protowire.BytesType)
	extra = protowire.AppendBytes(extra, []byte("last"))
	for _, tc := range []struct {
		name string
		msg  []byte
		ok   bool
	}{
		{"a chunk", full, true},
		{"empty", nil, true},
		{"unknown field, data twice", append(append([]byte{}, full...), extra...), true},
		{"truncated", full[:len(full)-5], false},
		{"length beyond the end", []byte{0x12, 0x7f, 1}, false},
		{"a group", []byte{0x0b}, false},
	} {
		for _, n := range []int{1, 7, len(tc.msg) + 1} {
			got, err := decodeBoth(t, c, tc.msg, n)
			if (err == nil) != tc.ok {
				t.Errorf("%s in buffers of %d: %v", tc.name, n, err)
			}
			c.release(got.GetData())
		}
	}
	// Data of the chunk size is read into the free list's buffers, used again once released.
	first, _ := decodeBoth(t, c, full, 16)
	c.release(first.GetData())
	second, _ := decodeBoth(t, c, full, 16)
	if &first.GetData()[0] != &second.GetData()[0] {
		t.Error("a released buffer was not used again")
	}
}

func FuzzChunkCodec(f *testing.F) {
	full, _ := proto.Marshal(&transferpb.Chunk{Offset: 4096, Data: []byte("data"), Sha256: []byte("sum")})
	f.Add(full, 3)
	f.Add([]byte{0x12, 0x02, 'a'}, 1)
	f.Add([]byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 2)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		c := newChunkCodec(8, 1)
		got, err := decodeBoth(t, c, b, max(1, n%64))
		if err == nil {
			c.release(got.GetData())
		}
	})
}
