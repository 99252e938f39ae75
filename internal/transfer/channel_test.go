package transfer_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lvm-operator/lvm-operator/internal/transfer"
	transferpb "github.com/lvm-operator/lvm-operator/internal/transfer/proto"
)

// pki is a CA, as the operator is for the node agents, issuing certificates.
type pki struct {
	t    *testing.T
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newPKI(t *testing.T) *pki {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lvms node CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &pki{t: t, cert: cert, key: key, pool: pool}
}

// issue returns a certificate of node name for the usage (client or server).
func (p *pki) issue(name string, usage x509.ExtKeyUsage) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		p.t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// countingFile counts the bytes read from the source device.
type countingFile struct {
	*os.File
	bytes *atomic.Uint64
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.bytes.Add(uint64(len(p)))
	return f.File.ReadAt(p, off)
}

// serve starts node-a's Transfer service over mutual TLS on a loopback port, serving LV vg/snap
// (src, with the allocated ranges); it returns its address and, per Read call so far, the bytes
// that call has read from the device.
func serve(t *testing.T, p *pki, v *transfer.Verifier, src *os.File) (string, func() []uint64) {
	var mu sync.Mutex
	var calls []*atomic.Uint64
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	open := func(_ context.Context, vol transfer.Volume) (transfer.Source, error) {
		if vol.LV == "stuck" { // a source that sends nothing until the test ends
			return transfer.Source{Ranges: func(func(transfer.Range) error) error { <-stuck; return nil },
				Size: 16 * mib, Dev: src, Release: func() error { return nil }}, nil
		}
		if vol.Class != "thin" || vol.LV != "snap" {
			return transfer.Source{}, fmt.Errorf("%w: %s/%s", transfer.ErrNotFound, vol.Class, vol.LV)
		}
		n := new(atomic.Uint64)
		mu.Lock()
		calls = append(calls, n)
		mu.Unlock()
		return transfer.Source{Ranges: list(allocated...), Size: 16 * mib, Dev: countingFile{File: src, bytes: n},
			Release: func() error { return nil }}, nil
	}
	creds := transfer.Credentials(&tls.Config{
		Certificates: []tls.Certificate{p.issue("node-a", x509.ExtKeyUsageServerAuth)},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: p.pool, MinVersion: tls.VersionTLS13,
	})
	srv := grpc.NewServer(grpc.Creds(creds))
	transferpb.RegisterTransferServer(srv, transfer.NewServer("node-a", v, open))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		out := make([]uint64, len(calls))
		for i, n := range calls {
			out[i] = n.Load()
		}
		return out
	}
}

// dial connects to addr as node (no client certificate when node is "").
func dial(t *testing.T, p *pki, addr, node string) transferpb.TransferClient {
	cfg := &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS13}
	if node != "" {
		cfg.Certificates = []tls.Certificate{p.issue(node, x509.ExtKeyUsageClientAuth)}
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(transfer.Credentials(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return transferpb.NewTransferClient(conn)
}

// TestChannel: node-b's agent fetches node-a's snapshot over mutual TLS with a token the operator
// issued; the token serves once, only node-b, and only with a certificate of the operator's CA.
func TestChannel(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	p := newPKI(t)
	src := device(t, "src", 16*mib, true)
	addr, reads := serve(t, p, transfer.NewVerifier(pub, nil), src)
	tokenFrom := func(srcNode, lv string) string {
		tok, err := transfer.Issue(priv, transfer.Claims{Source: transfer.Volume{Node: srcNode, Class: "thin", LV: lv},
			Target: transfer.Volume{Node: "node-b", Class: "thin", LV: "pvc-1"}, Expires: time.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	token := func(lv string) string { return tokenFrom("node-a", lv) }
	nodeB := dial(t, p, addr, "node-b")
	ctx := t.Context()

	// An interrupted fetch (the source stops after the first checkpoint) resumes with a new token
	// from its Progress, and the source reads only what comes after it.
	dst := device(t, "dst", 16*mib, false)
	o := transfer.Options{ChunkBytes: 512 * kib, CheckpointBytes: mib}
	cut, cancel := context.WithCancel(ctx)
	o.OnCheckpoint = func(transfer.Progress) error { cancel(); return nil }
	first, err := transfer.Fetch(cut, nodeB, token("snap"), transfer.Progress{}, dst, o)
	if err == nil || first.Offset == 0 || first.Complete {
		t.Fatalf("interrupted fetch: %+v, %v", first, err)
	}
	o.OnCheckpoint = nil
	done, err := transfer.Fetch(ctx, nodeB, token("snap"), first, dst, o)
	total := 64*kib + 2*mib + 512*kib + 4*mib
	// The resumed call has returned every chunk (Fetch saw the end of its stream): its count is final.
	r := reads()
	if err != nil || !done.Complete || len(r) != 2 || r[1] >= total || r[1] != done.Bytes-first.Bytes {
		t.Fatalf("resumed fetch: %+v (from %+v), %v; the source's reads per call %v of %d bytes", done, first, err,
			r, total)
	}
	checkCopied(t, src, dst, 16*mib, allocated)

	// A dense fetch (for a thick target) moves every byte of the source, holes too.
	whole := device(t, "whole", 16*mib, false)
	if done, err := transfer.Fetch(ctx, nodeB, token("snap"), transfer.Progress{}, whole,
		transfer.Options{Dense: true}); err != nil || !done.Complete || done.Bytes != 16*mib {
		t.Fatalf("dense fetch: %+v, %v; want all %d bytes", done, err, 16*mib)
	}
	checkCopied(t, src, whole, 16*mib, []transfer.Range{{Length: 16 * mib}})

	tok := token("snap")
	for name, tc := range map[string]struct {
		client transferpb.TransferClient
		token  string
		want   codes.Code
	}{
		"another node with node-b's token":  {dial(t, p, addr, "node-c"), tok, codes.PermissionDenied},
		"no client certificate":             {dial(t, p, addr, ""), tok, codes.Unavailable},
		"a token the operator did not sign": {nodeB, "e30.AAAA", codes.PermissionDenied},
		"a source that does not exist":      {nodeB, token("gone"), codes.NotFound},
		"a source on another node":          {nodeB, tokenFrom("node-c", "snap"), codes.PermissionDenied},
	} {
		_, err := transfer.Fetch(ctx, tc.client, tc.token, transfer.Progress{}, device(t, "x", 16*mib, false),
			transfer.Options{})
		if status.Code(errors.Unwrap(err)) != tc.want {
			t.Errorf("%s: %v, want %s", name, err, tc.want)
		}
	}
	// A source that sends nothing fails the fetch once Idle has passed.
	if _, err := transfer.Fetch(ctx, nodeB, token("stuck"), transfer.Progress{}, device(t, "s", 16*mib, false),
		transfer.Options{Idle: 200 * time.Millisecond}); !errors.Is(err, transfer.ErrStalled) {
		t.Errorf("a stalled source: %v, want %v", err, transfer.ErrStalled)
	}
	// The token refused to node-c still serves node-b, once.
	if _, err := transfer.Fetch(ctx, nodeB, tok, transfer.Progress{}, device(t, "y", 16*mib, false),
		transfer.Options{}); err != nil {
		t.Errorf("node-b with its token after node-c's attempt: %v", err)
	}
	_, err = transfer.Fetch(ctx, nodeB, tok, transfer.Progress{}, device(t, "z", 16*mib, false), transfer.Options{})
	if status.Code(errors.Unwrap(err)) != codes.PermissionDenied {
		t.Errorf("a replayed token: %v, want PermissionDenied", err)
	}
}
