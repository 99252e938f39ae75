package transfer

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// The transfer authority is the operator's: the CA of the certificates the node agents serve and
// call the Transfer service with, and the key tokens are signed with. Its private half is kept in
// the Secret AuthoritySecret of the operator namespace, which only the operator reads; its public
// half (Trust) in the ConfigMap TrustConfigMap there, which the node agents read. A node agent
// generates its key itself (it never leaves the node) and asks for its certificate with a
// CertificateSigningRequest of signer SignerName; the operator signs those that come from the node
// agent on the node they name (CheckNodeCSR, SignNode).
const (
	// SignerName is the signer of the node agents' CertificateSigningRequests.
	SignerName = "topolvm.io/transfer"
	// NodeNameExtra is the key of a CertificateSigningRequest's spec.extra that holds the node of the
	// requesting Pod: the API server sets it from a Pod-bound service account token.
	NodeNameExtra = "authentication.kubernetes.io/node-name"
	// AuthoritySecret is the Secret of the operator namespace holding the authority (SecretData).
	AuthoritySecret = "lvms-transfer-authority"
	// TrustConfigMap is the ConfigMap of the operator namespace holding the trust (ConfigMapData).
	TrustConfigMap = "lvms-transfer-trust"
	// DefaultCertLifetime is the lifetime of a node's certificate, and the longest it may ask for.
	DefaultCertLifetime = 24 * time.Hour
)

// Keys of the authority Secret's and the trust ConfigMap's data.
const (
	// KeyCACert holds the CA certificate (PEM), in both the Secret and the ConfigMap.
	KeyCACert = "ca.crt"
	// KeyCAKey holds the CA's ECDSA P-256 private key (PKCS #8 PEM), in the Secret.
	KeyCAKey = "ca.key"
	// KeyTokenKey holds the ed25519 private key tokens are signed with (PKCS #8 PEM), in the Secret.
	KeyTokenKey = "token.key"
	// KeyTokenPub holds the ed25519 public key tokens are verified with (PKIX PEM), in the ConfigMap.
	KeyTokenPub = "token.pub"
)

const (
	// caCommonName is the Subject CommonName of the transfer CA.
	caCommonName = "lvms-transfer-ca"
	// caLifetime is how long a new CA is valid.
	caLifetime = 10 * 365 * 24 * time.Hour
	// clockSkew backdates certificates, for nodes whose clocks run behind.
	clockSkew = 5 * time.Minute
)

// ErrRequestRefused means a certificate request breaks a rule of the node certificates: it is
// denied, never signed.
var ErrRequestRefused = errors.New("transfer certificate request refused")

// Authority is the transfer CA (certificate and key) and the token signing key.
type Authority struct {
	caCert   *x509.Certificate
	caKey    *ecdsa.PrivateKey
	tokenKey ed25519.PrivateKey
	// data is the authority as SecretData returns it.
	data map[string][]byte
}

// Trust is the public half of an Authority: what the node agents verify peers' certificates and
// tokens with.
type Trust struct {
	// CAPEM holds the CA certificates (PEM) peers' certificates must chain to.
	CAPEM []byte
	// TokenKey verifies tokens (NewVerifier).
	TokenKey ed25519.PublicKey
}

// NewAuthority returns a new authority: a self-signed ECDSA P-256 CA valid ten years and a new
// token key.
func NewAuthority() (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate transfer CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: caCommonName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caLifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create transfer CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse transfer CA certificate: %w", err)
	}
	_, tokenKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate transfer token key: %w", err)
	}
	caKeyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode transfer CA key: %w", err)
	}
	tokenKeyDER, err := x509.MarshalPKCS8PrivateKey(tokenKey)
	if err != nil {
		return nil, fmt.Errorf("encode transfer token key: %w", err)
	}
	return &Authority{caCert: cert, caKey: key, tokenKey: tokenKey, data: map[string][]byte{
		KeyCACert:   pemBlock("CERTIFICATE", der),
		KeyCAKey:    pemBlock("PRIVATE KEY", caKeyDER),
		KeyTokenKey: pemBlock("PRIVATE KEY", tokenKeyDER),
	}}, nil
}

// SecretData is the authority as the data of the Secret AuthoritySecret.
func (a *Authority) SecretData() map[string][]byte {
	data := make(map[string][]byte, len(a.data))
	for k, v := range a.data {
		data[k] = slices.Clone(v)
	}
	return data
}

// AuthorityFromSecretData reads an authority from the data of the Secret AuthoritySecret
// (SecretData). The CA certificate must be a CA whose key is the ECDSA P-256 key beside it.
func AuthorityFromSecretData(data map[string][]byte) (*Authority, error) {
	certDER, err := onePEM(data, KeyCACert, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", KeyCACert, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%s is not a CA certificate", KeyCACert)
	}
	caKey, err := privateKey(data, KeyCAKey)
	if err != nil {
		return nil, err
	}
	ec, ok := caKey.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("%s is a %T, not an ECDSA P-256 key", KeyCAKey, caKey)
	}
	if !ec.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("%s is not the key of %s", KeyCAKey, KeyCACert)
	}
	tokenKey, err := privateKey(data, KeyTokenKey)
	if err != nil {
		return nil, err
	}
	ed, ok := tokenKey.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s is a %T, not an ed25519 key", KeyTokenKey, tokenKey)
	}
	return &Authority{caCert: cert, caKey: ec, tokenKey: ed, data: map[string][]byte{
		KeyCACert:   pemBlock("CERTIFICATE", certDER),
		KeyCAKey:    slices.Clone(data[KeyCAKey]),
		KeyTokenKey: slices.Clone(data[KeyTokenKey]),
	}}, nil
}

// Trust is the authority's public half.
func (a *Authority) Trust() Trust {
	pub, _ := a.tokenKey.Public().(ed25519.PublicKey)
	return Trust{CAPEM: slices.Clone(a.data[KeyCACert]), TokenKey: pub}
}

// TokenKey is the key tokens are signed with (Issue).
func (a *Authority) TokenKey() ed25519.PrivateKey { return a.tokenKey }

// ConfigMapData is the trust as the data of the ConfigMap TrustConfigMap.
func (t Trust) ConfigMapData() map[string]string {
	pub, err := x509.MarshalPKIXPublicKey(t.TokenKey)
	if err != nil {
		panic(fmt.Sprintf("marshal an ed25519 public key: %v", err)) // cannot fail: its bytes go in as they are
	}
	return map[string]string{KeyCACert: string(t.CAPEM), KeyTokenPub: string(pemBlock("PUBLIC KEY", pub))}
}

// TrustFromConfigMapData reads the trust from the data of the ConfigMap TrustConfigMap
// (ConfigMapData).
func TrustFromConfigMapData(data map[string]string) (Trust, error) {
	t := Trust{CAPEM: []byte(data[KeyCACert])}
	if _, err := t.CertPool(); err != nil {
		return Trust{}, err
	}
	der, err := onePEM(map[string][]byte{KeyTokenPub: []byte(data[KeyTokenPub])}, KeyTokenPub, "PUBLIC KEY")
	if err != nil {
		return Trust{}, err
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return Trust{}, fmt.Errorf("parse %s: %w", KeyTokenPub, err)
	}
	if t.TokenKey, _ = pub.(ed25519.PublicKey); t.TokenKey == nil {
		return Trust{}, fmt.Errorf("%s is a %T, not an ed25519 key", KeyTokenPub, pub)
	}
	return t, nil
}

// CertPool holds the trust's CA certificates, for verifying peers' certificates.
func (t Trust) CertPool() (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	rest, n := t.CAPEM, 0
	for ; ; n++ {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%s holds a PEM block %q, not CERTIFICATE", KeyCACert, b.Type)
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", KeyCACert, err)
		}
		pool.AddCert(cert)
	}
	if len(bytes.TrimSpace(rest)) > 0 || n == 0 {
		return nil, fmt.Errorf("%s holds no PEM certificate, or data after its certificates", KeyCACert)
	}
	return pool, nil
}

// CheckNodeCSR parses a node's certificate request (PEM "CERTIFICATE REQUEST") and checks it is
// signed by its own key and asks for what node may have: CommonName node, the DNS name node and no
// other subject alternative name, and an ECDSA P-256 or ed25519 key. A refused request is an error
// wrapping ErrRequestRefused.
func CheckNodeCSR(csrPEM []byte, node string) (*x509.CertificateRequest, error) {
	if node == "" {
		return nil, fmt.Errorf("%w: no node", ErrRequestRefused)
	}
	b, rest := pem.Decode(csrPEM)
	if b == nil || b.Type != "CERTIFICATE REQUEST" || len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("%w: not one PEM CERTIFICATE REQUEST", ErrRequestRefused)
	}
	req, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: parse: %w", ErrRequestRefused, err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("%w: signature: %w", ErrRequestRefused, err)
	}
	switch k := req.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("%w: an ECDSA key of curve %s, not P-256", ErrRequestRefused, k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
	default:
		return nil, fmt.Errorf("%w: a %s key, not ECDSA P-256 or ed25519", ErrRequestRefused, req.PublicKeyAlgorithm)
	}
	if req.Subject.CommonName != node {
		return nil, fmt.Errorf("%w: common name %q, not the node %q", ErrRequestRefused, req.Subject.CommonName, node)
	}
	if len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 || !onlyDNSName(req, node) {
		return nil, fmt.Errorf("%w: subject alternative names %q %v %q %v, not just the DNS name %q",
			ErrRequestRefused, req.DNSNames, req.IPAddresses, req.EmailAddresses, req.URIs, node)
	}
	return req, nil
}

// onlyDNSName reports whether the request's subject alternative names are the DNS name node and
// nothing else, counting the kinds of name x509 does not parse.
func onlyDNSName(req *x509.CertificateRequest, node string) bool {
	sanOID := asn1.ObjectIdentifier{2, 5, 29, 17}
	found := 0
	for _, ext := range req.Extensions {
		if !ext.Id.Equal(sanOID) {
			continue
		}
		found++
		var names []asn1.RawValue
		rest, err := asn1.Unmarshal(ext.Value, &names)
		const dNSName = 2 // GeneralName's tag of a DNS name (RFC 5280, 4.2.1.6)
		if err != nil || len(rest) > 0 || len(names) != 1 || names[0].Class != asn1.ClassContextSpecific ||
			names[0].Tag != dNSName || string(names[0].Bytes) != node {
			return false
		}
	}
	return found == 1 && slices.Equal(req.DNSNames, []string{node})
}

// SignNode issues node's certificate for the key of req (checked with CheckNodeCSR): CommonName and
// DNS name node, for client and server authentication, from five minutes before now until lifetime
// after it (DefaultCertLifetime when lifetime is zero, negative or longer) but not after the CA's
// own end. It returns the certificate as PEM.
func (a *Authority) SignNode(req *x509.CertificateRequest, node string, lifetime time.Duration, now time.Time,
) ([]byte, error) {
	if lifetime <= 0 || lifetime > DefaultCertLifetime {
		lifetime = DefaultCertLifetime
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(a.caCert.NotAfter) {
		notAfter = a.caCert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: node},
		DNSNames:     []string{node},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.caCert, req.PublicKey, a.caKey)
	if err != nil {
		return nil, fmt.Errorf("sign the certificate of node %s: %w", node, err)
	}
	return pemBlock("CERTIFICATE", der), nil
}

// randomSerial returns a random 128-bit certificate serial number.
func randomSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate a certificate serial number: %w", err)
	}
	return serial, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// onePEM returns the DER of data[key], which must be exactly one PEM block of type typ.
func onePEM(data map[string][]byte, key, typ string) ([]byte, error) {
	v, ok := data[key]
	if !ok || len(v) == 0 {
		return nil, fmt.Errorf("no %s", key)
	}
	b, rest := pem.Decode(v)
	if b == nil || b.Type != typ || len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("%s is not one PEM %s", key, typ)
	}
	return b.Bytes, nil
}

// privateKey parses data[key], a PEM PKCS #8 private key.
func privateKey(data map[string][]byte, key string) (crypto.PrivateKey, error) {
	der, err := onePEM(data, key, "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", key, err)
	}
	return k, nil
}
