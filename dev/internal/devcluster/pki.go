package devcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// pki is the dev cluster's certificate authority and the files issued from it.
type pki struct {
	dir    string
	caCert *x509.Certificate
	caKey  crypto.Signer
	caPEM  []byte
}

// Files under the PKI directory.
const (
	caCertFile        = "ca.crt"
	apiserverCertFile = "apiserver.crt"
	apiserverKeyFile  = "apiserver.key"
	adminCertFile     = "admin.crt"
	adminKeyFile      = "admin.key"
	saKeyFile         = "sa.key"
	saPubFile         = "sa.pub"
	certValidity      = 365 * 24 * time.Hour
)

// newPKI creates a fresh CA in dir.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create PKI dir: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "lvms-dev-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	p := &pki{dir: dir, caCert: cert, caKey: key, caPEM: pemBlock("CERTIFICATE", der)}
	if err := os.WriteFile(filepath.Join(dir, caCertFile), p.caPEM, 0o644); err != nil {
		return nil, fmt.Errorf("write CA certificate: %w", err)
	}
	return p, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// issued is a certificate and key in PEM.
type issued struct{ cert, key []byte }

// issue signs a certificate for the given subject; server certificates get the SANs.
func (p *pki) issue(subject pkix.Name, server bool, ips []net.IP, dns []string) (issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return issued{}, fmt.Errorf("generate key for %s: %w", subject.CommonName, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return issued{}, fmt.Errorf("serial: %w", err)
	}
	usage := x509.ExtKeyUsageClientAuth
	if server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  ips,
		DNSNames:     dns,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, key.Public(), p.caKey)
	if err != nil {
		return issued{}, fmt.Errorf("sign certificate for %s: %w", subject.CommonName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return issued{}, fmt.Errorf("marshal key for %s: %w", subject.CommonName, err)
	}
	return issued{cert: pemBlock("CERTIFICATE", der), key: pemBlock("EC PRIVATE KEY", keyDER)}, nil
}

// write stores a certificate and key under the given names in dir.
func (c issued) write(dir, certName, keyName string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, certName), c.cert, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", certName, err)
	}
	if err := os.WriteFile(filepath.Join(dir, keyName), c.key, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", keyName, err)
	}
	return nil
}

// generatePKI writes everything the cluster needs: CA, apiserver serving certificate, admin
// client certificate, service-account signing key, the host's admin kubeconfig, and a kubelet
// kubeconfig for each of kubeletNodes (apiserver at the guest's bridged guestAPIPort).
func generatePKI(l Layout, apiserverPort, guestAPIPort int, kubeletNodes, users []string) error {
	p, err := newPKI(l.PKI())
	if err != nil {
		return err
	}
	api, err := p.issue(
		pkix.Name{CommonName: "kube-apiserver"},
		true,
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1)},
		[]string{
			"localhost",
			"kubernetes",
			"kubernetes.default",
			"kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local",
		},
	)
	if err != nil {
		return err
	}
	if err := api.write(p.dir, apiserverCertFile, apiserverKeyFile); err != nil {
		return err
	}
	admin, err := p.issue(
		pkix.Name{CommonName: "lvms-dev-admin", Organization: []string{"system:masters"}},
		false,
		nil,
		nil,
	)
	if err != nil {
		return err
	}
	if err := admin.write(p.dir, adminCertFile, adminKeyFile); err != nil {
		return err
	}
	if err := writeSAKey(p.dir); err != nil {
		return err
	}
	if err := writeKubeconfig(l.Kubeconfig(), apiserverPort, p.caPEM, admin); err != nil {
		return err
	}
	for _, user := range users {
		kc, err := p.issue(pkix.Name{CommonName: user, Organization: []string{"system:masters"}}, false, nil, nil)
		if err != nil {
			return err
		}
		if err := writeKubeconfig(l.UserKubeconfig(user), apiserverPort, p.caPEM, kc); err != nil {
			return err
		}
	}
	for _, node := range kubeletNodes {
		// The kubelet's identity for the Node authorizer and NodeRestriction.
		kc, err := p.issue(
			pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
			false,
			nil,
			nil,
		)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(l.NodeDir(node), 0o755); err != nil {
			return fmt.Errorf("create node dir: %w", err)
		}
		if err := writeKubeconfig(filepath.Join(l.NodeDir(node), "kubeconfig"), guestAPIPort, p.caPEM, kc); err != nil {
			return err
		}
	}
	return nil
}

// writeSAKey writes the service-account token signing key pair.
func writeSAKey(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate service-account key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("marshal service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return fmt.Errorf("marshal service-account public key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, saKeyFile), pemBlock("EC PRIVATE KEY", der), 0o600); err != nil {
		return fmt.Errorf("write service-account key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, saPubFile), pemBlock("PUBLIC KEY", pub), 0o644); err != nil {
		return fmt.Errorf("write service-account public key: %w", err)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for https://127.0.0.1:port with the embedded client
// certificate (the admin's or a kubelet's).
func writeKubeconfig(path string, port int, ca []byte, admin issued) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lvms-dev"] = &clientcmdapi.Cluster{
		Server:                   fmt.Sprintf("https://127.0.0.1:%d", port),
		CertificateAuthorityData: ca,
	}
	cfg.AuthInfos["lvms-dev-admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: admin.cert,
		ClientKeyData:         admin.key,
	}
	cfg.Contexts["lvms-dev"] = &clientcmdapi.Context{Cluster: "lvms-dev", AuthInfo: "lvms-dev-admin"}
	cfg.CurrentContext = "lvms-dev"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
