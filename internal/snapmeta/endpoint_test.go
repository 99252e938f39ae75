package snapmeta

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
)

// ca is a test certificate authority.
type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T, name string) *ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &ca{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// dir writes a certificate directory: a key pair issued by c for usage, and trusted as ca.crt.
func (c *ca) dir(t *testing.T, usage x509.ExtKeyUsage, trusted *ca) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "leaf"}, DNSNames: []string{ServerName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	for name, data := range map[string][]byte{
		CertFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
		CAFile:   trusted.pem,
	} {
		if err := os.WriteFile(filepath.Join(d, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// staticClasses hands out one configuration.
type staticClasses struct{ cfg *lvmd.Config }

func (s staticClasses) Watch(ctx context.Context) <-chan *lvmd.Config {
	ch := make(chan *lvmd.Config, 2)
	ch <- nil // not loaded yet
	ch <- s.cfg
	return ch
}

// recorder records the pools it is asked to recover.
type recorder struct{ pools chan []thinmeta.Pool }

func (r recorder) Recover(_ context.Context, pools ...thinmeta.Pool) ([]thinmeta.Pool, error) {
	r.pools <- pools
	return pools[:1], nil
}

// locator places snapshots on nodes.
type locator map[string][2]string

func (l locator) Locate(_ context.Context, id string) (string, string, error) {
	if v, ok := l[id]; ok {
		return v[0], v[1], nil
	}
	return "", "", status.Errorf(codes.NotFound, "no snapshot %s", id)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// TestProxyThroughEndpoint: the operator's proxy reaches the node's endpoint over mutual TLS and
// relays its stream; the endpoint recovers the thin pools of its classes before it serves; a client
// without the operator's certificate, or trusting another CA, is refused.
func TestProxyThroughEndpoint(t *testing.T) {
	nodeCA, clientCA, otherCA := newCA(t, "nodes"), newCA(t, "operator"), newCA(t, "other")
	nodeDir := nodeCA.dir(t, x509.ExtKeyUsageServerAuth, clientCA)
	opDir := clientCA.dir(t, x509.ExtKeyUsageClientAuth, nodeCA)

	ranges := []thinmeta.Range{{Offset: 0, Length: 64 * kib}, {Offset: mib, Length: 128 * kib}}
	node := NewNode(testLVs, &fakeMeta{ranges: map[string][]thinmeta.Range{"s1": ranges, "s2": ranges}})
	rec := recorder{pools: make(chan []thinmeta.Pool, 1)}
	cfg := &lvmd.Config{DeviceClasses: []lvmd.DeviceClass{
		{Name: "thin", VolumeGroup: "vg", Type: lvmd.TypeThin, ThinPool: &lvmd.ThinPoolConfig{Name: "pool"}},
		{Name: "thin-b", VolumeGroup: "vg", Type: lvmd.TypeThin, ThinPool: &lvmd.ThinPoolConfig{Name: "pool"}},
		{Name: "thick", VolumeGroup: "vg"},
	}}
	addr := freeAddr(t)
	ep, err := NewEndpoint(EndpointOptions{Addr: addr, CertDir: nodeDir, Node: node,
		Classes: staticClasses{cfg}, Recover: rec, Log: logr.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ep.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("endpoint: %v", err)
		}
	})
	if got, want := <-rec.pools, []thinmeta.Pool{{VG: "vg", Name: "pool"}}; !slices.Equal(got, want) {
		t.Fatalf("recovered %v, want %v", got, want)
	}
	waitListening(t, addr)

	where := locator{"s1": {"node-a", addr}, "s2": {"node-a", addr}, "elsewhere": {"node-b", addr}}
	c := serve(t, NewProxy(where, opDir))
	want := [][]string{{"0+65536", "1048576+131072"}}
	got, err := allocatedOf(t, c, "s1")
	if err != nil || !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("allocated through the proxy: %v, %v; want %v", got, err, want)
	}
	ds, err := c.GetMetadataDelta(
		t.Context(),
		&csi.GetMetadataDeltaRequest{BaseSnapshotId: "s1", TargetSnapshotId: "s2"},
	)
	if err == nil {
		got, err = collect(t, ds.Recv)
	}
	if err != nil || !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("delta through the proxy: %v, %v; want %v", got, err, want)
	}
	ds, err = c.GetMetadataDelta(
		t.Context(),
		&csi.GetMetadataDeltaRequest{BaseSnapshotId: "elsewhere", TargetSnapshotId: "s2"},
	)
	if err == nil {
		_, err = collect(t, ds.Recv)
	}
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("delta from a snapshot on another node: %v, want InvalidArgument", err)
	}
	if _, err := allocatedOf(t, c, "unknown"); status.Code(err) != codes.NotFound {
		t.Errorf("unknown snapshot: %v, want NotFound", err)
	}

	// A proxy whose client certificate is of another CA, and one that trusts another node CA.
	for name, dir := range map[string]string{
		"client certificate of another CA": otherCA.dir(t, x509.ExtKeyUsageClientAuth, nodeCA),
		"trusting another node CA":         clientCA.dir(t, x509.ExtKeyUsageClientAuth, otherCA),
	} {
		bad := serve(t, NewProxy(where, dir))
		if _, err := allocatedOf(t, bad, "s1"); status.Code(err) != codes.Unavailable {
			t.Errorf("%s: %v, want Unavailable (refused handshake)", name, err)
		}
	}
	// TLS without a client certificate straight to the endpoint.
	conn, err := grpc.NewClient(
		addr,
		grpc.WithTransportCredentials(credentials.NewClientTLSFromCert(poolOf(nodeCA), ServerName)),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := allocatedOf(t, csi.NewSnapshotMetadataClient(conn), "s1"); status.Code(err) != codes.Unavailable {
		t.Errorf("without a client certificate: %v, want Unavailable (refused handshake)", err)
	}
}

// waitListening waits until addr accepts connections.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	for range 200 {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s does not accept connections", addr)
}

func poolOf(c *ca) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.cert)
	return p
}

func allocatedOf(t *testing.T, c csi.SnapshotMetadataClient, id string) ([][]string, error) {
	t.Helper()
	s, err := c.GetMetadataAllocated(t.Context(), &csi.GetMetadataAllocatedRequest{SnapshotId: id})
	if err != nil {
		return nil, err
	}
	return collect(t, s.Recv)
}
