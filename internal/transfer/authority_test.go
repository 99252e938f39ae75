package transfer_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// csrPEM returns a certificate request of tmpl signed with key, as PEM.
func csrPEM(t *testing.T, tmpl *x509.CertificateRequest, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func p256(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func nodeRequest(node string) *x509.CertificateRequest {
	return &x509.CertificateRequest{Subject: pkix.Name{CommonName: node}, DNSNames: []string{node}}
}

func newAuthority(t *testing.T) *transfer.Authority {
	t.Helper()
	a, err := transfer.NewAuthority()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// signNode checks and signs node's request of key with a, and parses the certificate.
func signNode(t *testing.T, a *transfer.Authority, node string, key crypto.Signer, lifetime time.Duration,
	now time.Time,
) *x509.Certificate {
	t.Helper()
	req, err := transfer.CheckNodeCSR(csrPEM(t, nodeRequest(node), key), node)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err := a.SignNode(req, node, lifetime, now)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		t.Fatalf("SignNode returned no PEM certificate: %q", certPEM)
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// A node's certificate chains to the trust's CA for client and server authentication under the
// node's name, and lives as long as asked, at most a day.
func TestSignNode(t *testing.T) {
	a := newAuthority(t)
	pool, err := a.Trust().CertPool()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Second)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	for name, tc := range map[string]struct {
		key      crypto.Signer
		lifetime time.Duration
		want     time.Duration
	}{
		"default lifetime":    {p256(t), 0, transfer.DefaultCertLifetime},
		"shorter lifetime":    {p256(t), time.Hour, time.Hour},
		"longer lifetime cut": {p256(t), 48 * time.Hour, transfer.DefaultCertLifetime},
		"ed25519 key":         {edKey, 0, transfer.DefaultCertLifetime},
	} {
		t.Run(name, func(t *testing.T) {
			cert := signNode(t, a, "node-b", tc.key, tc.lifetime, now)
			for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth} {
				_, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "node-b", CurrentTime: now,
					KeyUsages: []x509.ExtKeyUsage{usage}})
				if err != nil {
					t.Errorf("usage %v: %v", usage, err)
				}
			}
			if cert.Subject.CommonName != "node-b" || !slices.Equal(cert.DNSNames, []string{"node-b"}) ||
				len(cert.IPAddresses)+len(cert.URIs)+len(cert.EmailAddresses) > 0 || cert.IsCA {
				t.Errorf("subject %s, DNS names %v, IPs %v, CA %v: want node-b alone", cert.Subject, cert.DNSNames,
					cert.IPAddresses, cert.IsCA)
			}
			if cert.KeyUsage != x509.KeyUsageDigitalSignature {
				t.Errorf("key usage %v, want digital signature", cert.KeyUsage)
			}
			if !cert.NotBefore.Equal(now.Add(-5*time.Minute)) || !cert.NotAfter.Equal(now.Add(tc.want)) {
				t.Errorf("valid %s to %s, want %s to %s", cert.NotBefore, cert.NotAfter, now.Add(-5*time.Minute),
					now.Add(tc.want))
			}
		})
	}
	if c1, c2 := signNode(t, a, "n", p256(t), 0, now), signNode(t, a, "n", p256(t), 0, now); c1.SerialNumber.Cmp(
		c2.SerialNumber) == 0 {
		t.Error("two certificates have the same serial number")
	}
	other := newAuthority(t)
	cert := signNode(t, other, "node-b", p256(t), 0, now)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "node-b", CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("a certificate of another authority verifies")
	}
}

// Two nodes' certificates make a mutual TLS connection that trusts only the authority, each side
// knowing the other by its node name (the channel's peerNode reads the client's CommonName).
func TestNodeCertificatesMutualTLS(t *testing.T) {
	a := newAuthority(t)
	pool, err := a.Trust().CertPool()
	if err != nil {
		t.Fatal(err)
	}
	pair := func(node string) tls.Certificate {
		key := p256(t)
		cert := signNode(t, a, node, key, 0, time.Now())
		return tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}
	}
	cConn, sConn := net.Pipe()
	server := tls.Server(
		sConn,
		&tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair("node-a")},
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool},
	)
	client := tls.Client(cConn, &tls.Config{MinVersion: tls.VersionTLS13, ServerName: "node-a", RootCAs: pool,
		Certificates: []tls.Certificate{pair("node-b")}})
	done := make(chan error, 1)
	go func() { done <- server.HandshakeContext(t.Context()) }()
	if err := client.HandshakeContext(t.Context()); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("server handshake: %v", err)
	}
	chains := server.ConnectionState().VerifiedChains
	if len(chains) == 0 || chains[0][0].Subject.CommonName != "node-b" {
		t.Errorf("the server sees client chains %v, want node-b's", chains)
	}
	// The pipes, not the TLS connections: their close_notify would wait for a reader.
	_ = cConn.Close()
	_ = sConn.Close()
}

// CheckNodeCSR refuses every request that asks for more than its node's name, with another key
// than ECDSA P-256 or ed25519, or whose signature is not its key's.
func TestCheckNodeCSRRefuses(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key := p256(t)
	with := func(mutate func(r *x509.CertificateRequest)) []byte {
		r := nodeRequest("node-b")
		mutate(r)
		return csrPEM(t, r, key)
	}
	good := csrPEM(t, nodeRequest("node-b"), key)
	b, _ := pem.Decode(good)
	tampered := slices.Clone(b.Bytes)
	tampered[len(tampered)-1] ^= 1 // the last byte of the signature
	otherNode := csrPEM(t, nodeRequest("node-c"), key)
	ob, _ := pem.Decode(otherNode)
	uri, _ := url.Parse("spiffe://cluster/node-b")
	for name, tc := range map[string]struct {
		pem  []byte
		node string
	}{
		"another node's name": {otherNode, "node-b"},
		"no common name":      {with(func(r *x509.CertificateRequest) { r.Subject.CommonName = "" }), "node-b"},
		"no DNS name":         {with(func(r *x509.CertificateRequest) { r.DNSNames = nil }), "node-b"},
		"an extra DNS name": {
			with(func(r *x509.CertificateRequest) { r.DNSNames = append(r.DNSNames, "x") }), "node-b",
		},
		"another DNS name": {with(func(r *x509.CertificateRequest) { r.DNSNames = []string{"node-c"} }), "node-b"},
		"an IP address": {
			with(func(r *x509.CertificateRequest) { r.IPAddresses = []net.IP{net.IPv4(10, 0, 0, 2)} }), "node-b",
		},
		"an email address": {
			with(func(r *x509.CertificateRequest) { r.EmailAddresses = []string{"a@b.c"} }), "node-b",
		},
		"a URI":              {with(func(r *x509.CertificateRequest) { r.URIs = []*url.URL{uri} }), "node-b"},
		"an RSA key":         {csrPEM(t, nodeRequest("node-b"), rsaKey), "node-b"},
		"an ECDSA P-384 key": {csrPEM(t, nodeRequest("node-b"), p384), "node-b"},
		"a bad signature": {
			pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: tampered}), "node-b",
		},
		"no node":                {good, ""},
		"not PEM":                {b.Bytes, "node-b"},
		"a certificate PEM type": {pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes}), "node-b"},
		"two requests":           {append(slices.Clone(good), otherNode...), "node-b"},
		"garbage DER": {
			pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: ob.Bytes[:20]}), "node-b",
		},
	} {
		t.Run(name, func(t *testing.T) {
			req, err := transfer.CheckNodeCSR(tc.pem, tc.node)
			if !errors.Is(err, transfer.ErrRequestRefused) || req != nil {
				t.Errorf("CheckNodeCSR: %v, %v; want ErrRequestRefused", req, err)
			}
		})
	}
	if _, err := transfer.CheckNodeCSR(good, "node-b"); err != nil {
		t.Errorf("the good request: %v", err)
	}
}

// The authority survives its Secret and the trust its ConfigMap; a Secret or ConfigMap that lost or
// broke a key is refused.
func TestAuthorityRoundTrip(t *testing.T) {
	a := newAuthority(t)
	data := a.SecretData()
	for _, k := range []string{"ca.crt", "ca.key", "token.key"} {
		if len(data[k]) == 0 {
			t.Fatalf("SecretData has no %s", k)
		}
	}
	back, err := transfer.AuthorityFromSecretData(data)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := a.Trust().CertPool()
	if err != nil {
		t.Fatal(err)
	}
	cert := signNode(t, back, "node-b", p256(t), 0, time.Now())
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "node-b",
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("a certificate of the read-back authority: %v", err)
	}
	claims := transfer.Claims{Target: transfer.Volume{Node: "node-b"}, Expires: time.Now().Add(time.Minute)}
	tok, err := transfer.Issue(back.TokenKey(), claims)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.NewVerifier(a.Trust().TokenKey, nil).Accept(tok, "node-b"); err != nil {
		t.Errorf("a token of the read-back authority: %v", err)
	}

	other := newAuthority(t).SecretData()
	broken := map[string]func(d map[string][]byte){
		"no ca.crt":    func(d map[string][]byte) { delete(d, "ca.crt") },
		"no ca.key":    func(d map[string][]byte) { delete(d, "ca.key") },
		"no token.key": func(d map[string][]byte) { delete(d, "token.key") },
		"empty ca.key": func(d map[string][]byte) { d["ca.key"] = nil },
		"corrupt ca.crt": func(d map[string][]byte) {
			d["ca.crt"] = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n")
		},
		"another CA's key":       func(d map[string][]byte) { d["ca.key"] = other["ca.key"] },
		"token key as CA key":    func(d map[string][]byte) { d["ca.key"] = d["token.key"] },
		"CA key as token key":    func(d map[string][]byte) { d["token.key"] = d["ca.key"] },
		"key in place of a cert": func(d map[string][]byte) { d["ca.crt"] = d["ca.key"] },
	}
	for name, mutate := range broken {
		t.Run(name, func(t *testing.T) {
			d := maps.Clone(data)
			mutate(d)
			if _, err := transfer.AuthorityFromSecretData(d); err == nil {
				t.Error("AuthorityFromSecretData accepted it")
			}
		})
	}
}

func TestTrustRoundTrip(t *testing.T) {
	trust := newAuthority(t).Trust()
	data := trust.ConfigMapData()
	if !strings.Contains(data["ca.crt"], "BEGIN CERTIFICATE") ||
		!strings.Contains(data["token.pub"], "BEGIN PUBLIC KEY") {
		t.Fatalf("ConfigMapData %v: want ca.crt and token.pub as PEM", data)
	}
	back, err := transfer.TrustFromConfigMapData(data)
	if err != nil {
		t.Fatal(err)
	}
	if string(back.CAPEM) != string(trust.CAPEM) || !back.TokenKey.Equal(trust.TokenKey) {
		t.Errorf("read back %+v, want %+v", back, trust)
	}
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	ecPub, _ := x509.MarshalPKIXPublicKey(p256(t).Public())
	for name, mutate := range map[string]func(d map[string]string){
		"no ca.crt":        func(d map[string]string) { delete(d, "ca.crt") },
		"no token.pub":     func(d map[string]string) { delete(d, "token.pub") },
		"corrupt ca.crt":   func(d map[string]string) { d["ca.crt"] = "-----BEGIN CERTIFICATE-----\nAAAA\n" },
		"garbage after CA": func(d map[string]string) { d["ca.crt"] += "junk" },
		"a private token key": func(d map[string]string) {
			der, _ := x509.MarshalPKCS8PrivateKey(edKey)
			d["token.pub"] = string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		},
		"an ECDSA token key": func(d map[string]string) {
			d["token.pub"] = string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecPub}))
		},
	} {
		t.Run(name, func(t *testing.T) {
			d := maps.Clone(data)
			mutate(d)
			if _, err := transfer.TrustFromConfigMapData(d); err == nil {
				t.Error("TrustFromConfigMapData accepted it")
			}
		})
	}
	if _, err := (transfer.Trust{}).CertPool(); err == nil {
		t.Error("an empty trust has a CertPool")
	}
}
