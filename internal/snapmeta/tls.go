package snapmeta

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Files of a certificate directory: the key pair this side presents and the CA it trusts for the
// other side (on the node: the CA of the operator's client certificates; in the operator: the CA of
// the nodes' serving certificates).
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	CAFile   = "ca.crt"
)

// ServerName is the name the nodes' serving certificate carries and the operator checks; it is
// dialled by pod IP, so the name is fixed rather than derived from the address.
const ServerName = "lvms-node-metadata"

// loadDir reads the key pair and the CA pool of dir. It reads the files on every call, so a rotated
// certificate is used from the next connection on.
func loadDir(dir string) (tls.Certificate, *x509.CertPool, error) {
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("load key pair of %s: %w", dir, err)
	}
	pem, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("read CA of %s: %w", dir, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return tls.Certificate{}, nil, errors.New("no certificate in " + filepath.Join(dir, CAFile))
	}
	return pair, pool, nil
}

// ServerTLS is the node's TLS configuration: its serving certificate, and only clients with a
// certificate of the CA in dir (the operator) are accepted. The files are read per connection.
func ServerTLS(dir string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			pair, pool, err := loadDir(dir)
			if err != nil {
				return nil, err
			}
			return &tls.Config{
				MinVersion:   tls.VersionTLS13,
				Certificates: []tls.Certificate{pair},
				ClientAuth:   tls.RequireAndVerifyClientCert,
				ClientCAs:    pool,
			}, nil
		},
	}
}

// ClientTLS is the operator's TLS configuration for calls to a node: its client certificate, and a
// server that proves ServerName with a certificate of the CA in dir. Read at each call.
func ClientTLS(dir string) (*tls.Config, error) {
	pair, pool, err := loadDir(dir)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair}, RootCAs: pool, ServerName: ServerName,
	}, nil
}
