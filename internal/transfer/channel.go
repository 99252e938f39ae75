package transfer

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	transferpb "github.com/lvm-operator/lvm-operator/internal/transfer/proto"
)

// Source is a transfer's source LV, opened on the source node.
type Source struct {
	// Ranges lists what the copy moves: the allocated ranges of a thin LV, or the whole device.
	Ranges Ranges
	// Size is the LV's size in bytes.
	Size uint64
	// Dev reads the LV's device.
	Dev io.ReaderAt
	// Release lets go of the device (and of whatever opening it took, such as an activation).
	Release func() error
}

// OpenFunc opens a transfer's source LV on the source node. An LV that does not exist is an error
// wrapping ErrNotFound.
type OpenFunc func(ctx context.Context, v Volume) (Source, error)

// Whole lists one range: the size bytes of a whole device.
func Whole(size uint64) Ranges {
	return func(fn func(Range) error) error {
		if size == 0 {
			return nil
		}
		return fn(Range{Length: size})
	}
}

// maxWireChunk is the largest chunk the service sends: a message of it stays below gRPC's default
// limit of 4 MiB.
const maxWireChunk = 4<<20 - 4096

var (
	// ErrNotFound means a transfer's source LV does not exist.
	ErrNotFound = errors.New("source volume not found")
	// ErrStalled means a Fetch got nothing from the source for Options.Idle.
	ErrStalled = errors.New("transfer stalled")
)

// Server is the source node's Transfer service. It must be served over TLS that requires and
// verifies client certificates issued by the operator: the client's node is the CommonName of its
// verified certificate.
type Server struct {
	transferpb.UnimplementedTransferServer
	node     string
	verifier *Verifier
	open     OpenFunc
}

// NewServer returns the Transfer service of node: v checks the tokens, open opens the source LVs. It
// serves only tokens whose source is on node.
func NewServer(node string, v *Verifier, open OpenFunc) *Server {
	return &Server{node: node, verifier: v, open: open}
}

// Read implements transferpb.TransferServer.
func (s *Server) Read(req *transferpb.ReadRequest, stream transferpb.Transfer_ReadServer) error {
	ctx := stream.Context()
	node, err := peerNode(ctx)
	if err != nil {
		return status.Error(codes.Unauthenticated, err.Error())
	}
	o, err := Options{ChunkBytes: req.GetChunkBytes()}.withDefaults()
	if err == nil && o.ChunkBytes > maxWireChunk {
		err = fmt.Errorf("chunk size %d is above %d (gRPC's default message limit)", o.ChunkBytes, maxWireChunk)
	}
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	claims, err := s.verifier.Accept(req.GetToken(), node)
	if err == nil && claims.Source.Node != s.node {
		err = fmt.Errorf("%w: its source is on node %q, this is node %q", ErrTokenInvalid, claims.Source.Node, s.node)
	}
	if err != nil {
		return status.Error(codes.PermissionDenied, err.Error())
	}
	src, err := s.open(ctx, claims.Source)
	if errors.Is(err, ErrNotFound) {
		return status.Error(codes.NotFound, err.Error())
	}
	if err != nil {
		return status.Errorf(codes.Internal, "open %s/%s: %v", claims.Source.Class, claims.Source.LV, err)
	}
	defer func() { _ = src.Release() }()
	ranges := src.Ranges
	if req.GetDense() {
		ranges = Whole(src.Size)
	}
	err = Send(ctx, ranges, req.GetFromOffset(), src.Dev, o.ChunkBytes, func(c Chunk) error {
		return stream.Send(&transferpb.Chunk{Offset: c.Offset, Data: c.Data, Sha256: c.Sum[:]})
	})
	if err != nil {
		return status.Errorf(codes.Internal, "send %s/%s: %v", claims.Source.Class, claims.Source.LV, err)
	}
	return nil
}

// peerNode returns the node of the client: the CommonName of its verified TLS certificate.
func peerNode(ctx context.Context) (string, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", errors.New("no peer")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return "", errors.New("no verified client certificate")
	}
	node := info.State.VerifiedChains[0][0].Subject.CommonName
	if node == "" {
		return "", errors.New("the client certificate names no node")
	}
	return node, nil
}

// fetchAhead is how many chunks Fetch receives ahead of what the sink took: the network is read
// while the chunks before are written.
const fetchAhead = 8

// Fetch is the target node's side: it reads the transfer token grants from the source node's
// Transfer service, from the Progress of an earlier attempt on, into dst, and returns the Progress
// reached (on an error, the last checkpoint). Chunks are received by a goroutine of their own, up to
// fetchAhead ahead of the writes, into buffers that are used again (chunkCodec).
func Fetch(ctx context.Context, c transferpb.TransferClient, token string, from Progress, dst Sink, o Options,
) (Progress, error) {
	r, err := NewReceiver(dst, from, o)
	if err != nil || from.Complete {
		return from, err
	}
	idle := cmp.Or(o.Idle, DefaultIdle)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stalled := fmt.Errorf("%w: nothing from the source for %s", ErrStalled, idle)
	watchdog := time.AfterFunc(idle, func() { cancel(stalled) })
	defer watchdog.Stop()
	codec := newChunkCodec(r.o.ChunkBytes, fetchAhead+2)
	stream, err := c.Read(ctx, &transferpb.ReadRequest{Token: token, FromOffset: from.Offset,
		ChunkBytes: r.o.ChunkBytes, Dense: o.Dense}, grpc.ForceCodecV2(codec))
	if err != nil {
		return from, fmt.Errorf("fetch: %w", errors.Join(err, context.Cause(ctx)))
	}
	msgs, ended := make(chan *transferpb.Chunk, fetchAhead), make(chan error, 1)
	go func() {
		defer close(msgs)
		ended <- receive(ctx, stream, watchdog, idle, msgs)
	}()
	for msg := range msgs {
		err := write(ctx, r, msg)
		codec.release(msg.GetData())
		if err != nil {
			cancel(err)
			for range msgs { //nolint:revive // drained so that the receiver ends
			}
			return r.Stop(), fmt.Errorf("fetch: %w", err)
		}
		watchdog.Reset(idle)
	}
	err = <-ended
	if errors.Is(err, io.EOF) {
		return r.Finish()
	}
	return r.Stop(), fmt.Errorf("fetch: %w", err)
}

// receive hands the stream's chunks to msgs until it ends (io.EOF when the source sent all), resetting
// the watchdog at each.
func receive(ctx context.Context, stream transferpb.Transfer_ReadClient, watchdog *time.Timer, idle time.Duration,
	msgs chan<- *transferpb.Chunk,
) error {
	for {
		msg, err := stream.Recv()
		watchdog.Reset(idle)
		if err != nil && context.Cause(ctx) != nil && !errors.Is(err, io.EOF) {
			err = errors.Join(err, context.Cause(ctx))
		}
		if err != nil {
			return err
		}
		select {
		case msgs <- msg:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// write checks a chunk's checksum field and has r write it.
func write(ctx context.Context, r *Receiver, msg *transferpb.Chunk) error {
	var sum [sha256.Size]byte
	if len(msg.GetSha256()) != len(sum) {
		return fmt.Errorf("chunk at %d: %w", msg.GetOffset(), ErrCorrupt)
	}
	copy(sum[:], msg.GetSha256())
	return r.Write(ctx, Chunk{Offset: msg.GetOffset(), Data: msg.GetData(), Sum: sum})
}
