package transfer

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"sync"

	"google.golang.org/grpc/credentials"
)

// batchBytes is how much one system call of a transfer's connection reads or writes at most: a chunk
// of the default size with its HTTP/2 frames and TLS records.
const batchBytes = 1<<20 + 64<<10

// Credentials are the gRPC transport credentials of the Transfer service, server and client: TLS as
// credentials.NewTLS does it, over a connection that moves TLS records in batches. crypto/tls writes
// each record (at most 16 KiB) with a system call of its own and reads about one record per call, so
// a MiB of a copy costs 64 or more system calls on each side, and a system call is what a UML guest
// or a virtual machine makes expensive. Here the records one Write of gRPC produces (gRPC's write
// buffer, up to a MiB) leave in one system call, and reads take whatever the socket holds, up to
// batchBytes. The handshake and what the peers see are those of TLS unchanged.
func Credentials(cfg *tls.Config) credentials.TransportCredentials {
	return batchedCreds{credentials.NewTLS(cfg)}
}

type batchedCreds struct {
	credentials.TransportCredentials
}

// ClientHandshake implements credentials.TransportCredentials.
func (c batchedCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn,
) (net.Conn, credentials.AuthInfo, error) {
	b := newBatchConn(raw)
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, b)
	if err != nil {
		return nil, nil, err
	}
	return &flushConn{Conn: conn, b: b}, info, nil
}

// ServerHandshake implements credentials.TransportCredentials.
func (c batchedCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	b := newBatchConn(raw)
	conn, info, err := c.TransportCredentials.ServerHandshake(b)
	if err != nil {
		return nil, nil, err
	}
	return &flushConn{Conn: conn, b: b}, info, nil
}

// Clone implements credentials.TransportCredentials.
func (c batchedCreds) Clone() credentials.TransportCredentials {
	return batchedCreds{c.TransportCredentials.Clone()}
}

// batchConn is the connection under TLS: reads go through a buffer; writes go straight to the socket
// except while a flushConn's Write holds it, when they gather until the last holder lets go.
type batchConn struct {
	net.Conn
	r *bufio.Reader // read by crypto/tls only, which reads one record at a time

	mu   sync.Mutex
	w    *bufio.Writer
	held int
}

func newBatchConn(raw net.Conn) *batchConn {
	return &batchConn{Conn: raw, r: bufio.NewReaderSize(raw, batchBytes), w: bufio.NewWriterSize(raw, batchBytes)}
}

// Read implements net.Conn.
func (b *batchConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// Write implements net.Conn. crypto/tls writes whole records, one at a time.
func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held > 0 {
		return b.w.Write(p)
	}
	return b.Conn.Write(p)
}

func (b *batchConn) hold() {
	b.mu.Lock()
	b.held++
	b.mu.Unlock()
}

// release lets go of a hold; the last one sends what gathered.
func (b *batchConn) release() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held--; b.held > 0 {
		return nil
	}
	return b.w.Flush()
}

// flushConn is the TLS connection over a batchConn: the records of one Write leave together. (It
// does not offer syscall.Conn: gRPC then leaves out the socket options channelz would report.)
type flushConn struct {
	net.Conn
	b *batchConn
}

// Write implements net.Conn.
func (c *flushConn) Write(p []byte) (int, error) {
	c.b.hold()
	n, err := c.Conn.Write(p)
	if ferr := c.b.release(); err == nil && ferr != nil {
		return n, ferr
	}
	return n, err
}
