package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The self-signed certificate of the metrics server when no certificate is mounted: valid for a
// year from an hour ago (clock skew), renewed a day before it ends.
const (
	selfSignedValidity = 365 * 24 * time.Hour
	selfSignedRenewal  = 24 * time.Hour
)

// selfSignedCert serves the metrics endpoint's certificate when neither --metrics-cert-dir nor
// controller-runtime's default directory holds one. It is an ECDSA P-256 key, made at the first
// handshake. controller-runtime would otherwise make two RSA-2048 keys (a CA and the server's) in
// every process at start: that took 1.1 s of the single CPU of a UML node, while the kubelet was
// probing the starting agent (2026-11-27).
type selfSignedCert struct {
	now  func() time.Time
	mu   sync.Mutex
	cert *tls.Certificate
}

// getCertificate is a tls.Config's GetCertificate.
func (s *selfSignedCert) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.cert == nil || now.After(s.cert.Leaf.NotAfter.Add(-selfSignedRenewal)) {
		cert, err := newSelfSignedCert(now)
		if err != nil {
			return nil, err
		}
		s.cert = cert
	}
	return s.cert, nil
}

// newSelfSignedCert is a certificate for localhost and 127.0.0.1 (the names controller-runtime's
// self-signed certificate carries; scrapers skip verification), signed by its own key.
func newSelfSignedCert(now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("metrics certificate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("metrics certificate serial: %w", err)
	}
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("localhost@%d", now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("metrics certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("metrics certificate: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// defaultMetricsCertDir is where controller-runtime's metrics server looks for tls.crt and tls.key
// when no directory is given, and where LVMS mounts its certificate.
func defaultMetricsCertDir() string {
	return filepath.Join(os.TempDir(), "k8s-metrics-server", "serving-certs")
}

// certFilesErr is the error of the first of tls.crt and tls.key that dir does not hold, or nil
// when it holds both files of a mounted certificate.
func certFilesErr(dir string) error {
	for _, name := range []string{metricsCertFile, metricsKeyFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}
