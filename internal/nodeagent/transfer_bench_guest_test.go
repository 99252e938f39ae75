//go:build guest

package nodeagent

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
	"github.com/lvm-operator/lvm-operator/internal/transfer"
	transferpb "github.com/lvm-operator/lvm-operator/internal/transfer/proto"
)

// TestGuestTransferBenchmark measures a copy between nodes against plain copies over the same path,
// in one guest with real lvm2: the Transfer service (gRPC over mutual TLS, SHA-256 per chunk, the
// target's checkpoints with fsync, dropped pages and read-back) on a loopback TCP port, and the
// floors of benchFloors over a loopback TCP connection: `dd | nc` (what the issue compares with) and
// a kernel copy (sendfile and splice). Two sources of TRANSFER_BENCH_GIB (default unset: skipped;
// make bench-transfer sets 4): a thin snapshot with a quarter of its chunks written (every fourth
// MiB) and a thick volume written whole; TRANSFER_BENCH_CHUNK_KIB sets the copy's chunk size. It logs
// MEASUREMENT lines: seconds, bytes moved, MB/s, and per floor the ratio of the copy's throughput
// (the volume's size over its time) to the floor's. The thin copy must move only the allocated bytes.
func TestGuestTransferBenchmark(t *testing.T) {
	gib, _ := strconv.ParseUint(os.Getenv("TRANSFER_BENCH_GIB"), 10, 64)
	if gib == 0 {
		t.Skip("TRANSFER_BENCH_GIB is not set")
	}
	size := gib << 30
	// Seven disks: a thin pool of gib+1 GiB (the source's quarter and a whole copy) and the rest thick.
	h, svc := tsGuestLVMDOn(t, 7, (gib+1)<<30)
	ts := NewTransferSources(svc, thinmeta.New(h))
	addr, key := benchServe(t, ts)

	thin := tsCreate(t, svc, "thin-src", "thin", size)
	benchWriteQuarter(t, h, thin.Path, size)
	_, err := svc.CreateSnapshot(t.Context(), lvmd.SnapshotRequest{Name: "thin-snap", DeviceClass: "thin",
		Source: "thin-src", ReadOnly: true})
	tsMust(t, err)
	thick := tsCreate(t, svc, "thick-src", "thick", size)
	_, err = exec.Run(t.Context(), h, "dd", "if=/dev/urandom", "of="+thick.Path, "bs=1M", "oflag=direct",
		"status=none", fmt.Sprintf("count=%d", size>>20))
	tsMust(t, err)

	for _, c := range []struct{ class, src string }{{"thin", "thin-snap"}, {"thick", "thick-src"}} {
		t.Run(c.class, func(t *testing.T) {
			srcPath := "/dev/gvg/" + c.src
			dst := tsCreate(t, svc, c.class+"-copy", c.class, size)
			start := time.Now()
			p := benchFetch(t, addr, key, c.class, c.src, dst.Path, c.class == "thick")
			ours := time.Since(start)
			tsSameData(t, srcPath, dst.Path)
			tsMust(t, svc.RemoveLV(t.Context(), c.class+"-copy", c.class))
			var floors []string
			for _, f := range benchFloors {
				dst = tsCreate(t, svc, c.class+"-floor", c.class, size)
				start = time.Now()
				n := f.copy(t, srcPath, dst.Path)
				took := time.Since(start)
				tsMust(t, svc.RemoveLV(t.Context(), c.class+"-floor", c.class))
				floors = append(floors, fmt.Sprintf("%s %.1f s, %d bytes, %.1f MB/s, ratio %.2f", f.name,
					took.Seconds(), n, float64(size)/1e6/took.Seconds(), took.Seconds()/ours.Seconds()))
			}
			t.Logf("MEASUREMENT %s %d GiB: transfer %.1f s, %d bytes moved, %.1f MB/s of the volume; floors: %s",
				c.class, gib, ours.Seconds(), p.Bytes, float64(size)/1e6/ours.Seconds(), strings.Join(floors, "; "))
			if c.class == "thin" && p.Bytes > size/4+size/64 {
				t.Errorf("the thin copy moved %d bytes; a quarter of the volume (%d) is allocated", p.Bytes, size/4)
			}
		})
	}
}

// benchWriteQuarter writes random data over every fourth MiB of dev.
func benchWriteQuarter(t *testing.T, h *exec.Host, dev string, size uint64) {
	t.Helper()
	script := fmt.Sprintf("i=0; while [ $i -lt %d ]; do dd if=/dev/urandom of=%s bs=1M count=1 seek=$i "+
		"oflag=direct conv=notrunc status=none || exit 1; i=$((i+4)); done", size>>20, dev)
	_, err := exec.Run(t.Context(), h, "sh", "-c", script)
	tsMust(t, err)
}

// benchServe serves ts as node-a's Transfer service over mutual TLS on a loopback port; it returns
// the address and the key that signs tokens.
func benchServe(t *testing.T, ts *TransferSources) (string, ed25519.PrivateKey) {
	t.Helper()
	ca := newBenchCA(t)
	pub, priv, err := ed25519.GenerateKey(nil)
	tsMust(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	tsMust(t, err)
	creds := transfer.Credentials(&tls.Config{Certificates: []tls.Certificate{ca.issue(t, "node-a")},
		ClientCAs: ca.pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13})
	g := grpc.NewServer(append(transferServerOptions(), grpc.Creds(creds))...)
	transferpb.RegisterTransferServer(g, transfer.NewServer("node-a", transfer.NewVerifier(pub, nil), ts.Open))
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	benchClientTLS = &tls.Config{Certificates: []tls.Certificate{ca.issue(t, "node-b")}, RootCAs: ca.pool,
		ServerName: "node-a", MinVersion: tls.VersionTLS13}
	return lis.Addr().String(), priv
}

var benchClientTLS *tls.Config

// benchChunkBytes is the chunk size TRANSFER_BENCH_CHUNK_KIB asks for, or 0 (the product's default).
func benchChunkBytes() uint64 {
	kib, _ := strconv.ParseUint(os.Getenv("TRANSFER_BENCH_CHUNK_KIB"), 10, 64)
	return kib << 10
}

// benchFetch copies LV lv of class from node-a into dst as node-b's agent does (fetcher.Fetch).
func benchFetch(
	t *testing.T,
	addr string,
	key ed25519.PrivateKey,
	class, lv, dst string,
	dense bool,
) transfer.Progress {
	t.Helper()
	token, err := transfer.Issue(key, transfer.Claims{Source: transfer.Volume{Node: "node-a", Class: class, LV: lv},
		Target: transfer.Volume{Node: "node-b", Class: class, LV: "copy"}, Expires: time.Now().Add(time.Hour)})
	tsMust(t, err)
	conn, err := grpc.NewClient(addr,
		append(transferDialOptions(), grpc.WithTransportCredentials(transfer.Credentials(benchClientTLS)))...)
	tsMust(t, err)
	defer func() { _ = conn.Close() }()
	dev, err := os.OpenFile(dst, os.O_RDWR, 0)
	tsMust(t, err)
	defer func() { _ = dev.Close() }()
	size, err := dev.Seek(0, io.SeekEnd)
	tsMust(t, err)
	p, err := transfer.Fetch(t.Context(), transferpb.NewTransferClient(conn), token, transfer.Progress{},
		deviceSink{dev}, transfer.Options{Dense: dense, CheckpointBytes: checkpointBytes(uint64(size)),
			ChunkBytes: benchChunkBytes()})
	if err != nil || !p.Complete {
		t.Fatalf("fetch: %+v, %v", p, err)
	}
	return p
}

// benchFloors are the plain copies a transfer is measured against, the whole device over a loopback
// TCP connection each: "dd|nc" is what the issue names, dd reading the source into a pipe, a copy loop
// with a user-space buffer from the pipe to the socket and from the socket to a pipe, and dd writing
// the target (conv=fsync); "kernel copy" has the kernel move the bytes (Go's io.Copy from a file to a
// TCP connection uses sendfile, from a connection to a file splice), which no copy that checks what
// it moves can do.
var benchFloors = []struct {
	name string
	copy func(t *testing.T, src, dst string) int64
}{{"dd|nc", benchDDPipe}, {"kernel copy", benchKernelCopy}}

// benchDDPipe copies the whole device src into dst as `dd if=src bs=1M | nc` into `nc -l | dd of=dst
// bs=1M conv=fsync` would (the guest has no nc: the copy loops play it); it returns the bytes moved.
func benchDDPipe(t *testing.T, src, dst string) int64 {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	tsMust(t, err)
	defer func() { _ = lis.Close() }()
	done := make(chan error, 1)
	go func() {
		reader := osexec.CommandContext(t.Context(), "dd", "if="+src, "bs=1M", "status=none")
		out, err := reader.StdoutPipe()
		if err == nil {
			err = reader.Start()
		}
		if err == nil {
			var conn net.Conn
			if conn, err = net.Dial("tcp", lis.Addr().String()); err == nil {
				_, err = io.CopyBuffer(struct{ io.Writer }{conn}, struct{ io.Reader }{out}, make([]byte, 1<<20))
				err = errors.Join(err, conn.Close())
			}
			err = errors.Join(err, reader.Wait())
		}
		done <- err
	}()
	conn, err := lis.Accept()
	tsMust(t, err)
	writer := osexec.CommandContext(t.Context(), "dd", "of="+dst, "bs=1M", "conv=fsync", "status=none")
	in, err := writer.StdinPipe()
	tsMust(t, err)
	tsMust(t, writer.Start())
	n, err := io.CopyBuffer(struct{ io.Writer }{in}, struct{ io.Reader }{conn}, make([]byte, 1<<20))
	tsMust(t, err)
	tsMust(t, in.Close())
	tsMust(t, writer.Wait())
	tsMust(t, <-done)
	return n
}

// benchKernelCopy copies the whole device src into dst over a loopback TCP connection with io.Copy
// between the files and the connection (sendfile and splice: the bytes never reach user space), and
// syncs dst; it returns the bytes moved.
func benchKernelCopy(t *testing.T, src, dst string) int64 {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	tsMust(t, err)
	defer func() { _ = lis.Close() }()
	done := make(chan error, 1)
	go func() {
		in, err := os.Open(src)
		if err == nil {
			var conn net.Conn
			if conn, err = net.Dial("tcp", lis.Addr().String()); err == nil {
				_, err = io.CopyBuffer(conn, in, make([]byte, 1<<20))
				err = errors.Join(err, conn.Close())
			}
			_ = in.Close()
		}
		done <- err
	}()
	conn, err := lis.Accept()
	tsMust(t, err)
	out, err := os.OpenFile(dst, os.O_WRONLY, 0)
	tsMust(t, err)
	n, err := io.CopyBuffer(out, conn, make([]byte, 1<<20))
	tsMust(t, err)
	tsMust(t, out.Sync())
	tsMust(t, out.Close())
	tsMust(t, <-done)
	return n
}

type benchCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newBenchCA(t *testing.T) *benchCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tsMust(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	tsMust(t, err)
	cert, err := x509.ParseCertificate(der)
	tsMust(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &benchCA{cert: cert, key: key, pool: pool}
}

func (ca *benchCA) issue(t *testing.T, node string) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tsMust(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: node},
		DNSNames: []string{node}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	tsMust(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
