package transfer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the proto codec chunkCodec marshals with
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	transferpb "github.com/lvm-operator/lvm-operator/internal/transfer/proto"
)

// chunkCodec is the gRPC codec of a Fetch: the proto codec, except that a Chunk's data is read
// straight into a buffer of its own free list, which the Fetch gives back once the chunk is written.
// The proto codec copies each chunk's data into a new allocation; a copy streams a GiB through
// fresh memory that way, and a fresh page is a page fault, which a UML guest or a virtual machine
// makes expensive. The wire format is the proto one (its Name is "proto").
type chunkCodec struct {
	proto encoding.CodecV2
	size  int
	free  chan []byte
}

func newChunkCodec(chunkBytes uint64, buffers int) *chunkCodec {
	return &chunkCodec{proto: encoding.GetCodecV2("proto"), size: int(chunkBytes), free: make(chan []byte, buffers)}
}

// Name implements encoding.CodecV2.
func (c *chunkCodec) Name() string { return c.proto.Name() }

// Marshal implements encoding.CodecV2.
func (c *chunkCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

// Unmarshal implements encoding.CodecV2: a Chunk field by field, anything else by the proto codec.
func (c *chunkCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*transferpb.Chunk)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	r := data.Reader()
	defer func() { _ = r.Close() }()
	m.Reset()
	if err := c.decodeChunk(r, m); err != nil {
		c.release(m.Data)
		m.Data = nil
		return fmt.Errorf("decode a transfer chunk: %w", err)
	}
	return nil
}

// decodeChunk reads a Chunk's fields from r into m (a field given twice: the last wins).
func (c *chunkCodec) decodeChunk(r *mem.Reader, m *transferpb.Chunk) error {
	for r.Remaining() > 0 {
		tag, err := binary.ReadUvarint(r)
		if err != nil {
			return err
		}
		if tag>>3 > math.MaxInt32 {
			return errors.New("field number out of range")
		}
		num, typ := protowire.DecodeTag(tag)
		switch {
		case !num.IsValid():
			return fmt.Errorf("invalid field number %d", num)
		case num == 1 && typ == protowire.VarintType:
			if m.Offset, err = binary.ReadUvarint(r); err != nil {
				return err
			}
		case num == 2 && typ == protowire.BytesType:
			n, err := length(r)
			if err != nil {
				return err
			}
			c.release(m.Data)
			m.Data = c.get(n)
			if _, err := io.ReadFull(r, m.Data); err != nil {
				return err
			}
		case num == 3 && typ == protowire.BytesType:
			n, err := length(r)
			if err != nil {
				return err
			}
			m.Sha256 = make([]byte, n)
			if _, err := io.ReadFull(r, m.Sha256); err != nil {
				return err
			}
		default:
			if err := skipField(r, typ); err != nil {
				return fmt.Errorf("field %d: %w", num, err)
			}
		}
	}
	return nil
}

// length reads the length of a bytes field and checks that r holds it.
func length(r *mem.Reader) (int, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, err
	}
	if n > uint64(r.Remaining()) {
		return 0, io.ErrUnexpectedEOF
	}
	return int(n), nil
}

// skipField reads past the value of a field of wire type typ.
func skipField(r *mem.Reader, typ protowire.Type) error {
	var n int
	switch typ {
	case protowire.VarintType:
		_, err := binary.ReadUvarint(r)
		return err
	case protowire.Fixed32Type:
		n = 4
	case protowire.Fixed64Type:
		n = 8
	case protowire.BytesType:
		var err error
		if n, err = length(r); err != nil {
			return err
		}
	default:
		return errors.New("unsupported wire type")
	}
	if got, err := r.Discard(n); err != nil || got != n {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// get returns a buffer of n bytes: one of the free list when it holds n.
func (c *chunkCodec) get(n int) []byte {
	if n <= c.size {
		select {
		case b := <-c.free:
			return b[:n]
		default:
			return make([]byte, n, c.size)
		}
	}
	return make([]byte, n)
}

// release gives a chunk's data back to the free list once it has been written.
func (c *chunkCodec) release(b []byte) {
	if cap(b) != c.size {
		return
	}
	select {
	case c.free <- b[:0]:
	default:
	}
}
