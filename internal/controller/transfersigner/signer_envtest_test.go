package transfersigner_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/controller/transfersigner"
	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// nodeUsages are the usages a node agent asks for.
var nodeUsages = []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth, certv1.UsageServerAuth}

// request is a CertificateSigningRequest made by an impersonated requester.
type request struct {
	user string
	// nodes is the node-name extra the API server records (as from a Pod-bound token); nil for none.
	nodes []string
	// name is the node the request asks a certificate of (CommonName and DNS name).
	name   string
	signer string
	usages []certv1.KeyUsage
	// bodyExtra is what the request's body claims in spec.extra (the API server overwrites it).
	bodyExtra map[string]certv1.ExtraValue
}

// create makes the request as its requester and returns its name.
func (r request) create(ctx context.Context, t *testing.T) string {
	t.Helper()
	var extra map[string][]string
	if r.nodes != nil {
		extra = map[string][]string{transfer.NodeNameExtra: r.nodes}
	}
	c, err := client.New(as(restCfg, r.user, extra), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: r.name}, DNSNames: []string{r.name}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "lvms-transfer-" + r.name + "-"},
		Spec: certv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: r.signer, Usages: r.usages, ExpirationSeconds: ptr.To(int32(3600)),
			// What the body claims of the requester; the API server records who asked instead.
			Extra: r.bodyExtra, Username: nodeAgent,
		},
	}
	if err := c.Create(ctx, csr); err != nil {
		t.Fatalf("create the request as %s: %v", r.user, err)
	}
	return csr.Name
}

// TestSigner: the API server records who asked, and the signer signs a node's certificate only for
// the node agent on that node. A Pod on another node, another service account, or a request made
// without a Pod-bound token cannot get node-b's certificate.
func TestSigner(t *testing.T) {
	ctx := t.Context()
	other := request{user: nodeAgent, nodes: []string{"node-b"}, name: "node-b", signer: "example.com/other",
		usages: nodeUsages}.create(ctx, t)
	cases := []struct {
		name   string
		req    request
		reason string // of the Denied condition; "" when the certificate is issued
	}{
		{"the node agent on node-b asks for node-b", request{user: nodeAgent, nodes: []string{"node-b"},
			name: "node-b"}, ""},
		{"the node agent on node-b asks for node-c", request{user: nodeAgent, nodes: []string{"node-b"},
			name: "node-c"}, transfersigner.ReasonInvalidRequest},
		{"the node agent on node-c claims node-b in the body", request{user: nodeAgent, nodes: []string{"node-c"},
			name: "node-b", bodyExtra: map[string]certv1.ExtraValue{transfer.NodeNameExtra: {"node-b"}}},
			transfersigner.ReasonInvalidRequest},
		{"another service account on node-b", request{user: "system:serviceaccount:lvms-system:default",
			nodes: []string{"node-b"}, name: "node-b"}, transfersigner.ReasonNotNodeAgent},
		{"another namespace's lvms-node on node-b", request{user: "system:serviceaccount:default:lvms-node",
			nodes: []string{"node-b"}, name: "node-b"}, transfersigner.ReasonNotNodeAgent},
		{"the node agent without a node", request{user: nodeAgent, name: "node-b"}, transfersigner.ReasonNoNode},
		{"the node agent on two nodes", request{user: nodeAgent, nodes: []string{"node-b", "node-c"},
			name: "node-b"}, transfersigner.ReasonNoNode},
		{"other usages", request{user: nodeAgent, nodes: []string{"node-b"}, name: "node-b",
			usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth}},
			transfersigner.ReasonInvalidRequest},
	}
	names := make([]string, len(cases))
	for i, tc := range cases {
		tc.req.signer = transfer.SignerName
		if tc.req.usages == nil {
			tc.req.usages = nodeUsages
		}
		names[i] = tc.req.create(ctx, t)
	}
	pool := trustPool(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := waitFinished(t, names[i])
			if tc.reason == "" {
				checkIssued(t, csr, pool, "node-b")
				return
			}
			checkDenied(t, csr, tc.reason)
		})
	}
	var csr certv1.CertificateSigningRequest
	if err := k8s.Get(ctx, types.NamespacedName{Name: other}, &csr); err != nil {
		t.Fatal(err)
	}
	if len(csr.Status.Conditions) > 0 || len(csr.Status.Certificate) > 0 {
		t.Errorf("another signer's request was touched: %+v", csr.Status)
	}
}

// waitFinished waits until the request is issued, denied or failed.
func waitFinished(t *testing.T, name string) *certv1.CertificateSigningRequest {
	t.Helper()
	var csr certv1.CertificateSigningRequest
	eventually(t, "request "+name+" is decided", func(ctx context.Context) error {
		if err := k8s.Get(ctx, types.NamespacedName{Name: name}, &csr); err != nil {
			return err
		}
		for _, c := range csr.Status.Conditions {
			if c.Type != certv1.CertificateApproved {
				return nil
			}
		}
		if len(csr.Status.Certificate) == 0 {
			return fmt.Errorf("conditions %+v, no certificate", csr.Status.Conditions)
		}
		return nil
	})
	return &csr
}

// checkIssued checks the request is approved and its certificate is node's, for client and server
// authentication, from the trust's CA, for the hour asked.
func checkIssued(t *testing.T, csr *certv1.CertificateSigningRequest, pool *x509.CertPool, node string) {
	t.Helper()
	if len(csr.Status.Conditions) != 1 || csr.Status.Conditions[0].Type != certv1.CertificateApproved ||
		csr.Status.Conditions[0].Reason != transfersigner.ReasonApproved {
		t.Errorf("conditions %+v, want Approved with reason %s alone", csr.Status.Conditions,
			transfersigner.ReasonApproved)
	}
	b, _ := pem.Decode(csr.Status.Certificate)
	if b == nil {
		t.Fatalf("certificate %q is not PEM", csr.Status.Certificate)
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: node,
			KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("the certificate does not verify with the trust ConfigMap's CA for %v: %v", usage, err)
		}
	}
	if cert.Subject.CommonName != node {
		t.Errorf("CommonName %q, want %q", cert.Subject.CommonName, node)
	}
	if d := cert.NotAfter.Sub(cert.NotBefore); d != time.Hour+5*time.Minute {
		t.Errorf("valid for %s, want the hour asked and five minutes before", d)
	}
}

func checkDenied(t *testing.T, csr *certv1.CertificateSigningRequest, reason string) {
	t.Helper()
	if len(csr.Status.Certificate) > 0 {
		t.Error("a certificate was issued")
	}
	if len(csr.Status.Conditions) != 1 || csr.Status.Conditions[0].Type != certv1.CertificateDenied ||
		csr.Status.Conditions[0].Reason != reason || csr.Status.Conditions[0].Message == "" {
		t.Errorf("conditions %+v, want Denied with reason %s and a message alone", csr.Status.Conditions, reason)
	}
	t.Logf("denied: %s", csr.Status.Conditions[0].Message)
}

// trustPool is the CA pool of the trust ConfigMap, as the node agents read it.
func trustPool(t *testing.T) *x509.CertPool {
	t.Helper()
	var pool *x509.CertPool
	eventually(t, "the trust ConfigMap", func(ctx context.Context) error {
		var cm corev1.ConfigMap
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: operatorNamespace, Name: transfer.TrustConfigMap},
			&cm); err != nil {
			return err
		}
		trust, err := transfer.TrustFromConfigMapData(cm.Data)
		if err != nil {
			return err
		}
		pool, err = trust.CertPool()
		return err
	})
	return pool
}

// TestTrustConfigMap: the trust ConfigMap holds the authority Secret's public half, and comes back
// when deleted or edited.
func TestTrustConfigMap(t *testing.T) {
	ctx := t.Context()
	var sec corev1.Secret
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: operatorNamespace, Name: transfer.AuthoritySecret},
		&sec); err != nil {
		t.Fatal(err)
	}
	a, err := transfer.AuthorityFromSecretData(sec.Data)
	if err != nil {
		t.Fatal(err)
	}
	want := a.Trust().ConfigMapData()
	key := types.NamespacedName{Namespace: operatorNamespace, Name: transfer.TrustConfigMap}
	matches := func(ctx context.Context) error {
		var cm corev1.ConfigMap
		if err := k8s.Get(ctx, key, &cm); err != nil {
			return err
		}
		for k, v := range want {
			if cm.Data[k] != v {
				return fmt.Errorf("%s is %q, want %q", k, cm.Data[k], v)
			}
		}
		return nil
	}
	eventually(t, "the trust ConfigMap holds the Secret's trust", matches)
	var cm corev1.ConfigMap
	if err := k8s.Get(ctx, key, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data[transfer.KeyCACert] = "edited"
	if err := k8s.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "an edited trust ConfigMap is restored", matches)
	if err := k8s.Delete(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a deleted trust ConfigMap is recreated", matches)
}

// TestEnsure: Ensure makes the authority once and then reads it; it never replaces a Secret it
// cannot read.
func TestEnsure(t *testing.T) {
	ctx := t.Context()
	ns := "ensure-test"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	first, err := transfersigner.Ensure(ctx, k8s, k8s, ns, fieldOwner)
	if err != nil {
		t.Fatal(err)
	}
	again, err := transfersigner.Ensure(ctx, k8s, k8s, ns, fieldOwner)
	if err != nil {
		t.Fatal(err)
	}
	if string(first.Trust().CAPEM) != string(again.Trust().CAPEM) || !first.TokenKey().Equal(again.TokenKey()) {
		t.Error("a second Ensure made another authority")
	}
	// Another replica made it meanwhile: the Secret the reader did not see yet exists.
	var sec corev1.Secret
	key := types.NamespacedName{Namespace: ns, Name: transfer.AuthoritySecret}
	if err := k8s.Get(ctx, key, &sec); err != nil {
		t.Fatal(err)
	}
	raced, err := transfersigner.Ensure(ctx, &notFoundOnce{Reader: k8s}, k8s, ns, fieldOwner)
	if err != nil || string(raced.Trust().CAPEM) != string(first.Trust().CAPEM) {
		t.Errorf("Ensure losing the race to create: %v; want the existing authority", err)
	}
	if sec.Immutable == nil || !*sec.Immutable {
		t.Error("the authority Secret is not immutable")
	}

	broken := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: transfer.AuthoritySecret},
		Data: map[string][]byte{transfer.KeyCACert: []byte("not a certificate")}}
	if err := k8s.Create(ctx, broken); err != nil {
		t.Fatal(err)
	}
	if _, err := transfersigner.Ensure(ctx, k8s, k8s, "default", fieldOwner); err == nil {
		t.Error("Ensure accepted a broken authority Secret")
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(broken), broken); err != nil ||
		string(broken.Data[transfer.KeyCACert]) != "not a certificate" {
		t.Errorf("the broken Secret was replaced: %v", err)
	}
}

// notFoundOnce answers its first Get with NotFound, as a replica that looked before another one
// created the Secret.
type notFoundOnce struct {
	client.Reader
	answered bool
}

func (r *notFoundOnce) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption,
) error {
	if !r.answered {
		r.answered = true
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}
