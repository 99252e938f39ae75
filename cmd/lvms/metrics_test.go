package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lvm-operator/lvm-operator/internal/tlsprofile"
)

// writeCert writes a self-signed certificate for host into dir as tls.crt and tls.key and returns
// the certificate's PEM.
func writeCert(t *testing.T, dir, host string) []byte {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certPEM
}

// startMetricsServer starts the metrics server of opts, authenticating with cfg, and returns its
// address once it listens. It stops at the end of the test.
func startMetricsServer(t *testing.T, opts metricsserver.Options, cfg *rest.Config) string {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := metricsserver.NewServer(opts, cfg, httpClient)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("metrics server: %v", err)
		}
	})
	bound, ok := srv.(interface{ GetBindAddr() string })
	if !ok {
		t.Fatalf("metrics server %T does not tell its address", srv)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if addr := bound.GetBindAddr(); addr != "" {
			return addr
		}
	}
	t.Fatal("metrics server does not listen after 10s")
	return ""
}

// TestMetricsOptions: the metrics server is HTTPS only, with a certificate from --metrics-cert-dir
// when given (and then required) or else self-signed, speaks HTTP/1.1 only, and "0" disables it.
// The authentication and authorization of scrapes is TestMetricsEndpointAuthorization's.
func TestMetricsOptions(t *testing.T) {
	withCert := t.TempDir()
	mounted := writeCert(t, withCert, "lvms-operator-metrics.lvms-system.svc")
	// controller-runtime's default directory is under $TMPDIR: one of the test's own.
	t.Setenv("TMPDIR", t.TempDir())
	tests := []struct {
		name       string
		addr       string
		certDir    string
		defaultDir bool // a certificate in controller-runtime's default directory
		wantErr    string
		disabled   bool
		wantCert   []byte // nil: a certificate generated in memory
	}{
		{name: "0 disables the server", addr: "0", disabled: true},
		{name: "self-signed without a certificate directory", addr: "127.0.0.1:0"},
		{name: "mounted certificate", addr: "127.0.0.1:0", certDir: withCert, wantCert: mounted},
		{name: "certificate where LVMS mounts it", addr: "127.0.0.1:0", defaultDir: true},
		{name: "certificate directory without files", addr: "127.0.0.1:0", certDir: t.TempDir(),
			wantErr: "--metrics-cert-dir"},
	}
	// The filter talks to the API server only when a request arrives; none does here.
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCert := tt.wantCert
			if tt.defaultDir {
				dir := defaultMetricsCertDir()
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = os.RemoveAll(dir) })
				wantCert = writeCert(t, dir, "lvms-operator-metrics.openshift-storage.svc")
			}
			opts, err := metricsOptions(tt.addr, tt.certDir, false, tlsprofile.Profile{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("metricsOptions() error = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("metricsOptions(): %v", err)
			}
			if !opts.SecureServing || opts.FilterProvider == nil {
				t.Fatalf("options %+v: want HTTPS and an authentication and authorization filter", opts)
			}
			if tt.disabled {
				if srv, err := metricsserver.NewServer(opts, cfg, http.DefaultClient); srv != nil || err != nil {
					t.Fatalf("NewServer() = %v, %v; want no server", srv, err)
				}
				return
			}
			addr := startMetricsServer(t, opts, cfg)
			state := handshake(t, addr)
			if state.NegotiatedProtocol == "h2" {
				t.Error("metrics server negotiated HTTP/2")
			}
			served := state.PeerCertificates[0]
			switch {
			case wantCert != nil && !bytes.Equal(served.Raw, leafCert(t, wantCert)):
				t.Error("metrics server does not serve the mounted certificate")
			case wantCert == nil && (served.PublicKeyAlgorithm != x509.ECDSA || served.VerifyHostname("127.0.0.1") != nil):
				t.Errorf("self-signed certificate with a %v key for %v, want ECDSA for 127.0.0.1",
					served.PublicKeyAlgorithm, served.IPAddresses)
			}
		})
	}
}

// handshake connects to addr with TLS, offering HTTP/2 and HTTP/1.1, and returns the connection state.
func handshake(t *testing.T, addr string) tls.ConnectionState {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{
		InsecureSkipVerify: true, // the certificate is the one under test
		NextProtos:         []string{"h2", "http/1.1"},
	})
	if err != nil {
		t.Fatalf("TLS handshake with %s: %v", addr, err)
	}
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState()
}

// leafCert is the DER of the first (the serving) certificate of a PEM chain.
func leafCert(t *testing.T, pemBytes []byte) []byte {
	t.Helper()
	certs, err := certutil.ParseCertsPEM(pemBytes)
	if err != nil {
		t.Fatalf("parse certificate: %v", err)
	}
	return certs[0].Raw
}

// TestSelfSignedCertRenewal: the self-signed certificate is made once, kept while valid, and made
// anew a day before it ends.
func TestSelfSignedCertRenewal(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	self := &selfSignedCert{now: func() time.Time { return now }}
	first, err := self.getCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Leaf.NotBefore.Before(now) || !first.Leaf.NotAfter.Equal(now.Add(selfSignedValidity)) {
		t.Fatalf("valid %v to %v, want from before %v for %v", first.Leaf.NotBefore, first.Leaf.NotAfter, now,
			selfSignedValidity)
	}
	for _, step := range []struct {
		after time.Duration
		same  bool
	}{
		{after: time.Minute, same: true},
		{after: selfSignedValidity - selfSignedRenewal - time.Minute, same: true},
		{after: selfSignedValidity - selfSignedRenewal + time.Minute, same: false},
	} {
		now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC).Add(step.after)
		got, err := self.getCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		if (got == first) != step.same {
			t.Errorf("after %v: the same certificate %v, want %v", step.after, got == first, step.same)
		}
	}
}
