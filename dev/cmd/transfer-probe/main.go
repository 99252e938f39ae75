// Command transfer-probe tries to read a volume from a node agent's Transfer service the ways an
// attacker inside the cluster could, without the node's certificate: over plain TCP, over TLS without
// a client certificate, and over TLS with a self-signed certificate naming the token's target node.
// It prints one line per attempt, "<attempt>: refused: <error>" or "<attempt>: SERVED", and exits 0
// only when every attempt was refused. It is e2e tooling (the workload image), never in the product.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"math/big"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	transferpb "github.com/lvm-operator/lvm-operator/internal/transfer/proto"
)

func main() {
	addr := flag.String("addr", "", "the agent's Transfer service, host:port")
	token := flag.String("token", "not-a-token", "the token to present")
	node := flag.String("node", "", "the node the forged certificate names")
	flag.Parse()
	forged, err := selfSigned(*node)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	served := false
	for _, a := range []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"plaintext", insecure.NewCredentials()},
		{"tls-without-client-certificate", credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})},
		{"tls-with-forged-certificate", credentials.NewTLS(&tls.Config{InsecureSkipVerify: true,
			Certificates: []tls.Certificate{forged}})},
	} {
		if err := read(*addr, *token, a.creds); err != nil {
			fmt.Printf("%s: refused: %v\n", a.name, err)
			continue
		}
		served = true
		fmt.Printf("%s: SERVED\n", a.name)
	}
	if served {
		os.Exit(1)
	}
}

// read asks for the token's volume and reads its first chunk.
func read(addr, token string, creds credentials.TransportCredentials) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	stream, err := transferpb.NewTransferClient(conn).Read(ctx, &transferpb.ReadRequest{Token: token})
	if err != nil {
		return err
	}
	_, err = stream.Recv()
	return err
}

// selfSigned is a client certificate for node that no one signed but itself.
func selfSigned(node string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: node},
		DNSNames: []string{node}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
