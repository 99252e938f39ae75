//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"strings"
	"testing"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestTransferSecurity attacks the node agents' Transfer service from inside the cluster: a pod that
// is not a node agent reaches an agent's port 9830 over plain TCP, over TLS without a client
// certificate and over TLS with a self-signed certificate naming the other node (dev/cmd/transfer-probe
// in the workload image): every read is refused. And a CertificateSigningRequest for a node's transfer
// certificate made by someone who is not that node's agent (the suite's administrator) is denied by the
// operator's signer, with no certificate issued.
func TestTransferSecurity(t *testing.T) {
	fullSetOnly(t, "the transfer endpoint refuses callers without a valid single-use token")
	e := newEnv(t)
	var agents corev1.PodList
	if err := e.c.List(e.ctx(), &agents, client.InNamespace(operatorNS),
		client.MatchingLabels{"app.kubernetes.io/name": "lvms-node"}); err != nil {
		t.Fatal(err)
	}
	var agent *corev1.Pod
	for i := range agents.Items {
		if p := &agents.Items[i]; p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			agent = p
			break
		}
	}
	if agent == nil {
		t.Fatal("no running node agent")
	}
	other := e.otherNode(agent.Spec.NodeName)
	addr := net.JoinHostPort(agent.Status.PodIP, "9830")
	probe := newPod("probe", "exec transfer-probe -addr "+addr+" -node "+other)
	probe.Spec.NodeSelector = map[string]string{corev1.LabelHostname: agent.Spec.NodeName}
	e.create(probe)
	_, out := e.finished("probe")
	t.Logf("transfer-probe against %s (the agent of %s), forging %s:\n%s", addr, agent.Spec.NodeName, other, out)
	for _, attempt := range []string{"plaintext", "tls-without-client-certificate", "tls-with-forged-certificate"} {
		if !strings.Contains(out, attempt+": refused: ") {
			t.Errorf("attempt %s was not refused", attempt)
		}
	}

	csr := transferCSR(t, other)
	if err := e.c.Create(e.ctx(), csr); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.c.Delete(context.Background(), csr) }()
	e.waitFor("the transfer signer denies a request not made by the node's agent",
		func(ctx context.Context) (bool, string, error) {
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(csr), csr); err != nil {
				return false, "", err
			}
			if len(csr.Status.Certificate) > 0 {
				return false, "", fmt.Errorf("a certificate for node %s was issued to the administrator", other)
			}
			for _, c := range csr.Status.Conditions {
				if c.Type == certv1.CertificateDenied {
					t.Logf("denied: %s: %s", c.Reason, c.Message)
					return true, "", nil
				}
				if c.Type == certv1.CertificateApproved {
					return false, "", fmt.Errorf("approved: %s", c.Message)
				}
			}
			return false, fmt.Sprintf("conditions %v", csr.Status.Conditions), nil
		})
}

// transferCSR is a request for node's transfer certificate, as the node's agent would make it.
func transferCSR(t *testing.T, node string) *certv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: node}, DNSNames: []string{node}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-forged-transfer-"},
		Spec: certv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: "topolvm.io/transfer",
			Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageClientAuth,
				certv1.UsageServerAuth},
		},
	}
}
