package transfersigner

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

const nodeAgent = "system:serviceaccount:lvms-system:lvms-node"

// nodeCSR is a request of the node agent on node for name's certificate.
func nodeCSR(t *testing.T, node, name string) *certv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: name}, DNSNames: []string{name}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certv1.CertificateSigningRequest{Spec: certv1.CertificateSigningRequestSpec{
		Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
		SignerName: transfer.SignerName,
		Usages:     []certv1.KeyUsage{certv1.UsageServerAuth, certv1.UsageDigitalSignature, certv1.UsageClientAuth},
		Username:   nodeAgent,
		Extra:      map[string]certv1.ExtraValue{transfer.NodeNameExtra: {node}},
	}}
}

func TestReview(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*certv1.CertificateSigningRequest)
		reason string // "" when signed
	}{
		"the node agent for its node, usages in any order": {func(*certv1.CertificateSigningRequest) {}, ""},
		"another user": {func(c *certv1.CertificateSigningRequest) {
			c.Spec.Username = "system:serviceaccount:lvms-system:default"
		}, ReasonNotNodeAgent},
		"no extra": {func(c *certv1.CertificateSigningRequest) { c.Spec.Extra = nil }, ReasonNoNode},
		"no node": {func(c *certv1.CertificateSigningRequest) {
			c.Spec.Extra[transfer.NodeNameExtra] = nil
		}, ReasonNoNode},
		"an empty node": {func(c *certv1.CertificateSigningRequest) {
			c.Spec.Extra[transfer.NodeNameExtra] = []string{""}
		}, ReasonNoNode},
		"two nodes": {func(c *certv1.CertificateSigningRequest) {
			c.Spec.Extra[transfer.NodeNameExtra] = []string{"node-b", "node-b"}
		}, ReasonNoNode},
		"another node": {func(c *certv1.CertificateSigningRequest) {
			c.Spec.Extra[transfer.NodeNameExtra] = []string{"node-c"}
		}, ReasonInvalidRequest},
		"a usage missing": {func(c *certv1.CertificateSigningRequest) {
			c.Spec.Usages = c.Spec.Usages[:2]
		}, ReasonInvalidRequest},
		"a usage more": {func(c *certv1.CertificateSigningRequest) {
			c.Spec.Usages = append(c.Spec.Usages, certv1.UsageKeyEncipherment)
		}, ReasonInvalidRequest},
		"a usage twice": {func(c *certv1.CertificateSigningRequest) {
			c.Spec.Usages = append(c.Spec.Usages[:2], certv1.UsageServerAuth)
		}, ReasonInvalidRequest},
		"no request": {func(c *certv1.CertificateSigningRequest) { c.Spec.Request = nil }, ReasonInvalidRequest},
	} {
		t.Run(name, func(t *testing.T) {
			csr := nodeCSR(t, "node-b", "node-b")
			tc.mutate(csr)
			req, node, no := review(csr, nodeAgent)
			switch {
			case tc.reason == "" && (no != nil || req == nil || node != "node-b"):
				t.Errorf("review: %v, %q, %+v; want node-b's request", req, node, no)
			case tc.reason != "" && (no == nil || no.reason != tc.reason || no.message == "" || req != nil):
				t.Errorf("review: %+v; want refused with reason %s", no, tc.reason)
			}
		})
	}
}

func TestFinished(t *testing.T) {
	status := func(cert string, typ certv1.RequestConditionType, s corev1.ConditionStatus,
	) certv1.CertificateSigningRequestStatus {
		st := certv1.CertificateSigningRequestStatus{Certificate: []byte(cert)}
		if typ != "" {
			st.Conditions = []certv1.CertificateSigningRequestCondition{{Type: typ, Status: s}}
		}
		return st
	}
	for name, tc := range map[string]struct {
		status certv1.CertificateSigningRequestStatus
		want   bool
	}{
		"new":                      {status("", "", ""), false},
		"approved, not issued yet": {status("", certv1.CertificateApproved, corev1.ConditionTrue), false},
		"issued":                   {status("x", certv1.CertificateApproved, corev1.ConditionTrue), true},
		"denied":                   {status("", certv1.CertificateDenied, corev1.ConditionTrue), true},
		"failed":                   {status("", certv1.CertificateFailed, corev1.ConditionTrue), true},
		"denied as False":          {status("", certv1.CertificateDenied, corev1.ConditionFalse), false},
	} {
		if got := finished(&certv1.CertificateSigningRequest{Status: tc.status}); got != tc.want {
			t.Errorf("%s: finished %v, want %v", name, got, tc.want)
		}
	}
}
