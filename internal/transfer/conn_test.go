package transfer_test

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/lvm-operator/lvm-operator/internal/transfer"
	transferpb "github.com/lvm-operator/lvm-operator/internal/transfer/proto"
)

// countingListener counts the writes of the connections it accepts.
type countingListener struct {
	net.Listener
	writes, bytes *atomic.Uint64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return countingConn{Conn: c, writes: l.writes, bytes: l.bytes}, err
}

type countingConn struct {
	net.Conn
	writes, bytes *atomic.Uint64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	c.bytes.Add(uint64(len(p)))
	return c.Conn.Write(p)
}

// countingCreds counts the writes gRPC makes to the connections its server handshakes return: the
// writes above TLS, each of which crypto/tls turns into one record per 16 KiB.
type countingCreds struct {
	credentials.TransportCredentials
	writes, bytes *atomic.Uint64
}

func (c countingCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		return nil, nil, err
	}
	return countingConn{Conn: conn, writes: c.writes, bytes: c.bytes}, info, nil
}

func (c countingCreds) Clone() credentials.TransportCredentials {
	return countingCreds{c.TransportCredentials.Clone(), c.writes, c.bytes}
}

// handshakeWrites is how many system calls a server's TLS 1.3 handshake may add outside gRPC's
// writes (its flight, the session tickets, an alert at close).
const handshakeWrites = 4

// TestCredentialsBatchTLSRecords: a copy served with transfer.Credentials writes its TLS records in
// batches: each Write of gRPC, however many records crypto/tls makes of it, leaves in one system call,
// where crypto/tls alone writes one per 16 KiB record. How large gRPC's writes are depends on flow
// control and so on the machine's load; what is asserted is the batching, which does not. A client
// with crypto/tls's own credentials and one with transfer.Credentials both fetch the same bytes (the
// wire is plain TLS).
func TestCredentialsBatchTLSRecords(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	p := newPKI(t)
	const size = 16 * mib
	src := device(t, "src", size, true)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	writes, bytes := new(atomic.Uint64), new(atomic.Uint64)
	gwrites, gbytes := new(atomic.Uint64), new(atomic.Uint64)
	srv := grpc.NewServer(grpc.Creds(countingCreds{transfer.Credentials(&tls.Config{
		Certificates: []tls.Certificate{p.issue("node-a", x509.ExtKeyUsageServerAuth)},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: p.pool, MinVersion: tls.VersionTLS13,
	}), gwrites, gbytes}), grpc.WriteBufferSize(1<<20))
	open := func(_ context.Context, _ transfer.Volume) (transfer.Source, error) {
		return transfer.Source{
			Ranges:  transfer.Whole(size),
			Size:    size,
			Dev:     src,
			Release: func() error { return nil },
		}, nil
	}
	transferpb.RegisterTransferServer(srv, transfer.NewServer("node-a", transfer.NewVerifier(pub, nil), open))
	go func() { _ = srv.Serve(countingListener{Listener: lis, writes: writes, bytes: bytes}) }()
	t.Cleanup(srv.Stop)

	cfg := &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS13,
		Certificates: []tls.Certificate{p.issue("node-b", x509.ExtKeyUsageClientAuth)}}
	for _, c := range []struct {
		name  string
		creds credentials.TransportCredentials
	}{{"tls", credentials.NewTLS(cfg)}, {"batched", transfer.Credentials(cfg)}} {
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(c.creds),
			grpc.WithReadBufferSize(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		tok, err := transfer.Issue(
			priv,
			transfer.Claims{
				Source: transfer.Volume{Node: "node-a", Class: "thick", LV: "a"},
				Target: transfer.Volume{
					Node:  "node-b",
					Class: "thick",
					LV:    c.name,
				},
				Expires: time.Now().Add(time.Minute),
			},
		)
		if err != nil {
			t.Fatal(err)
		}
		dst := device(t, "dst-"+c.name, size, false)
		w0, b0, gw0 := writes.Load(), bytes.Load(), gwrites.Load()
		got, err := transfer.Fetch(t.Context(), transferpb.NewTransferClient(conn), tok, transfer.Progress{}, dst,
			transfer.Options{Dense: true})
		if err != nil || !got.Complete {
			t.Fatalf("%s client: %+v, %v", c.name, got, err)
		}
		checkCopied(t, src, dst, size, []transfer.Range{{Length: size}})
		n, b, g := writes.Load()-w0, bytes.Load()-b0, gwrites.Load()-gw0
		records := b / (16<<10 + 256) // at least this many TLS records went out
		t.Logf("%s client: the server wrote %d bytes in %d system calls for gRPC's %d writes (%d+ records)",
			c.name, b, n, g, records)
		if b < size || n > g+handshakeWrites {
			t.Errorf("%s client: %d bytes in %d system calls for %d writes of gRPC; want %d+ bytes, "+
				"one system call per write of gRPC and at most %d more", c.name, b, n, g, size, handshakeWrites)
		}
		// What the batching saves shows only if gRPC wrote more than a record at a time.
		if g+handshakeWrites >= records {
			t.Errorf("%s client: gRPC wrote %d+ records in %d writes: too few records per write to tell "+
				"batched writes from one per record", c.name, records, g)
		}
	}
}
