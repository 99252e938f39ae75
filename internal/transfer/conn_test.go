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

// TestCredentialsBatchTLSRecords: a copy served with transfer.Credentials writes its TLS records in
// batches, a few system calls per MiB where crypto/tls alone writes one per 16 KiB record; a client
// with crypto/tls's own credentials and one with transfer.Credentials both fetch the same bytes from
// it (the wire is plain TLS).
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
	srv := grpc.NewServer(grpc.Creds(transfer.Credentials(&tls.Config{
		Certificates: []tls.Certificate{p.issue("node-a", x509.ExtKeyUsageServerAuth)},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: p.pool, MinVersion: tls.VersionTLS13,
	})), grpc.WriteBufferSize(1<<20))
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
		w0, b0 := writes.Load(), bytes.Load()
		got, err := transfer.Fetch(t.Context(), transferpb.NewTransferClient(conn), tok, transfer.Progress{}, dst,
			transfer.Options{Dense: true})
		if err != nil || !got.Complete {
			t.Fatalf("%s client: %+v, %v", c.name, got, err)
		}
		checkCopied(t, src, dst, size, []transfer.Range{{Length: size}})
		n, b := writes.Load()-w0, bytes.Load()-b0
		t.Logf("%s client: the server wrote %d bytes in %d system calls", c.name, b, n)
		// Without batching: at least one write per 16 KiB record, 1024 for 16 MiB.
		if b < size || n > 8*size/mib {
			t.Errorf("%s client: the server wrote %d bytes in %d writes; want %d bytes in at most %d",
				c.name, b, n, size, 8*size/mib)
		}
	}
}
