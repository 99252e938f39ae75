package transfer

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A node agent's transfer identity: a key it makes in memory (it never leaves the node and dies with
// the process) and the certificate the operator signs for it. The agent asks for the certificate
// with a CertificateSigningRequest of signer SignerName; the operator signs it only for the node the
// requesting pod runs on, which the API server records in the request from the pod's service
// account token (NodeNameExtra). So no pod can hold another node's certificate, and a transfer's
// peer is known by its certificate's node name.

// IdentityOptions configure a node's Identity.
type IdentityOptions struct {
	// Client creates and reads the CertificateSigningRequests and reads the trust ConfigMap (an
	// uncached client: the agent has no watch on either).
	Client client.Client
	// Node is this node; Namespace the operator namespace (of the trust ConfigMap).
	Node, Namespace string
	// Lifetime asked for the certificate (default DefaultCertLifetime); it is renewed after two
	// thirds of it.
	Lifetime time.Duration
	// Poll is how often a pending request and the trust are read (default 1 s while waiting, the
	// trust every minute after).
	Poll time.Duration
}

// Identity keeps a node's certificate and the cluster's transfer trust current; it is a manager
// Runnable and serves the TLS configurations of the Transfer service and of its clients.
type Identity struct {
	o     IdentityOptions
	ready chan struct{}
	once  sync.Once

	mu    sync.RWMutex
	cert  *tls.Certificate
	trust Trust
	pool  *x509.CertPool
}

// NewIdentity returns the identity of o.Node; Start obtains its certificate.
func NewIdentity(o IdentityOptions) (*Identity, error) {
	if o.Client == nil || o.Node == "" || o.Namespace == "" {
		return nil, errors.New("transfer identity: Client, Node and Namespace are required")
	}
	if o.Lifetime == 0 {
		o.Lifetime = DefaultCertLifetime
	}
	if o.Poll == 0 {
		o.Poll = time.Second
	}
	return &Identity{o: o, ready: make(chan struct{})}, nil
}

// NeedLeaderElection is false: every node agent has its own identity.
func (*Identity) NeedLeaderElection() bool { return false }

// Ready is closed once the identity has a certificate and the trust.
func (id *Identity) Ready() <-chan struct{} { return id.ready }

// Start obtains the trust and a certificate, and renews the certificate after two thirds of its
// lifetime, until ctx ends. Failures are retried with a growing wait.
func (id *Identity) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("transfer-identity")
	wait := id.o.Poll
	for ctx.Err() == nil {
		next, err := id.refresh(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			log.Error(err, "Obtaining the node's transfer certificate failed; retrying", "after", wait)
			next, wait = wait, min(2*wait, time.Minute)
		} else {
			wait = id.o.Poll
		}
		select {
		case <-ctx.Done():
		case <-time.After(next):
		}
	}
	return nil
}

// refresh reads the trust and, when the certificate is missing or due, obtains a new one; it
// returns how long until the next refresh.
func (id *Identity) refresh(ctx context.Context) (time.Duration, error) {
	trust, err := id.readTrust(ctx)
	if err != nil {
		return 0, err
	}
	pool, err := trust.CertPool()
	if err != nil {
		return 0, err
	}
	id.mu.Lock()
	id.trust, id.pool = trust, pool
	cert := id.cert
	id.mu.Unlock()
	if cert == nil || time.Now().After(renewAt(cert.Leaf)) {
		if cert, err = id.obtain(ctx); err != nil {
			return 0, err
		}
		id.mu.Lock()
		id.cert = cert
		id.mu.Unlock()
		ctrl.LoggerFrom(ctx).Info("Obtained the node's transfer certificate", "node", id.o.Node,
			"notAfter", cert.Leaf.NotAfter)
	}
	id.once.Do(func() { close(id.ready) })
	return min(time.Until(renewAt(cert.Leaf)), time.Minute) + time.Second, nil
}

// renewAt is when a certificate is renewed: after two thirds of its lifetime.
func renewAt(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(2 * c.NotAfter.Sub(c.NotBefore) / 3)
}

func (id *Identity) readTrust(ctx context.Context) (Trust, error) {
	var cm corev1.ConfigMap
	key := types.NamespacedName{Namespace: id.o.Namespace, Name: TrustConfigMap}
	if err := id.o.Client.Get(ctx, key, &cm); err != nil {
		return Trust{}, fmt.Errorf("read the transfer trust ConfigMap %s (made by the operator): %w", key, err)
	}
	t, err := TrustFromConfigMapData(cm.Data)
	if err != nil {
		return Trust{}, fmt.Errorf("ConfigMap %s: %w", key, err)
	}
	return t, nil
}

// obtain makes a new key, asks the operator to sign it for this node, and waits for the
// certificate.
func (id *Identity) obtain(ctx context.Context) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate transfer key: %w", err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: id.o.Node}, DNSNames: []string{id.o.Node},
	}, key)
	if err != nil {
		return nil, fmt.Errorf("make certificate request: %w", err)
	}
	csr := &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "lvms-transfer-" + id.o.Node + "-"},
		Spec: certv1.CertificateSigningRequestSpec{
			Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName:        SignerName,
			ExpirationSeconds: ptr.To(int32(id.o.Lifetime / time.Second)),
			Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth,
				certv1.UsageServerAuth},
		},
	}
	if err := id.o.Client.Create(ctx, csr); err != nil {
		return nil, fmt.Errorf("create CertificateSigningRequest: %w", err)
	}
	certPEM, err := id.waitIssued(ctx, csr.Name)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode transfer key: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return nil, fmt.Errorf("certificate of CertificateSigningRequest %s: %w", csr.Name, err)
	}
	return &pair, nil
}

// issueTimeout bounds the wait for the operator to sign a request.
const issueTimeout = 2 * time.Minute

// waitIssued polls CertificateSigningRequest name until it carries a certificate, and fails when it
// is denied or failed, or not signed within issueTimeout.
func (id *Identity) waitIssued(ctx context.Context, name string) ([]byte, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, issueTimeout,
		fmt.Errorf("CertificateSigningRequest %s not signed within %s: is the operator running?", name, issueTimeout))
	defer cancel()
	for {
		var csr certv1.CertificateSigningRequest
		if err := id.o.Client.Get(ctx, types.NamespacedName{Name: name}, &csr); err != nil {
			return nil, fmt.Errorf("read CertificateSigningRequest %s: %w", name, errors.Join(err, context.Cause(ctx)))
		}
		for _, c := range csr.Status.Conditions {
			if (c.Type == certv1.CertificateDenied || c.Type == certv1.CertificateFailed) &&
				c.Status == corev1.ConditionTrue {
				return nil, fmt.Errorf("CertificateSigningRequest %s %s: %s: %s", name, c.Type, c.Reason, c.Message)
			}
		}
		if len(csr.Status.Certificate) > 0 {
			return csr.Status.Certificate, nil
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(id.o.Poll):
		}
	}
}

// current returns the certificate and the CA pool; an error before Ready.
func (id *Identity) current() (*tls.Certificate, *x509.CertPool, error) {
	id.mu.RLock()
	defer id.mu.RUnlock()
	if id.cert == nil || id.pool == nil {
		return nil, nil, errors.New("the node's transfer certificate is not issued yet")
	}
	return id.cert, id.pool, nil
}

// TokenKey is the public key transfer tokens are verified with (nil before Ready).
func (id *Identity) TokenKey() ed25519.PublicKey {
	id.mu.RLock()
	defer id.mu.RUnlock()
	return id.trust.TokenKey
}

// ServerTLS is the TLS configuration of the node's Transfer service: this node's certificate, and a
// client certificate of the transfer CA required.
func (id *Identity) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, pool, err := id.current()
			if err != nil {
				return nil, err
			}
			return &tls.Config{
				MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{*cert},
				ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
			}, nil
		},
	}
}

// ClientTLS is the TLS configuration to reach node's Transfer service: its certificate must be of
// the transfer CA and name node; this node's certificate is the client's.
func (id *Identity) ClientTLS(node string) (*tls.Config, error) {
	_, pool, err := id.current()
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS13, ServerName: node, RootCAs: pool,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, _, err := id.current()
			return c, err
		},
	}, nil
}
