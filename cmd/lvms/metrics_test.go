package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
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
	tests := []struct {
		name     string
		addr     string
		certDir  string
		wantErr  string
		disabled bool
		wantCert []byte // nil: a certificate generated in memory
	}{
		{name: "0 disables the server", addr: "0", disabled: true},
		{name: "self-signed without a certificate directory", addr: "127.0.0.1:0"},
		{name: "mounted certificate", addr: "127.0.0.1:0", certDir: withCert, wantCert: mounted},
		{name: "certificate directory without files", addr: "127.0.0.1:0", certDir: t.TempDir(),
			wantErr: "--metrics-cert-dir"},
	}
	// The filter talks to the API server only when a request arrives; none does here.
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := metricsOptions(tt.addr, tt.certDir, false)
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
			served := state.PeerCertificates[0].Raw
			if tt.wantCert != nil && !bytes.Equal(served, leafCert(t, tt.wantCert)) {
				t.Error("metrics server does not serve the certificate of --metrics-cert-dir")
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
