package transfersigner

import (
	"context"
	"crypto/x509"
	"fmt"
	"slices"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// Reasons of the conditions the signer sets on the CertificateSigningRequests of
// transfer.SignerName.
const (
	// ReasonApproved: the request comes from the node agent on the node it names.
	ReasonApproved = "LVMSTransferNodeIdentity"
	// ReasonNotNodeAgent: the requester is not the node agent's service account.
	ReasonNotNodeAgent = "LVMSTransferNotNodeAgent"
	// ReasonNoNode: the API server recorded no single node of the requesting Pod (the request was not
	// made with a Pod-bound service account token).
	ReasonNoNode = "LVMSTransferNoNodeName"
	// ReasonInvalidRequest: the request asks for another name than its node's, other usages, or a
	// key the node certificates do not have, or is not signed by its key.
	ReasonInvalidRequest = "LVMSTransferInvalidRequest"
	// ReasonSignFailed: signing an approved request failed.
	ReasonSignFailed = "LVMSTransferSignFailed"
)

// nodeUsages are the usages a request must ask for, exactly (sorted).
var nodeUsages = []certv1.KeyUsage{certv1.UsageClientAuth, certv1.UsageDigitalSignature, certv1.UsageServerAuth}

// Signer approves and signs the node agents' CertificateSigningRequests of transfer.SignerName,
// and denies the others of that signer.
type Signer struct {
	// csrs reads the requests (the signer's own cache).
	csrs client.Reader
	// client writes their approval and status.
	client    client.Client
	authority *transfer.Authority
	// requester is the user name of the node agent's service account.
	requester string
	now       func() time.Time
}

// refusal is why a request is not signed: a condition's reason and message.
type refusal struct{ reason, message string }

// Reconcile approves and signs one request, or denies it; requests of other signers and those
// already issued, denied or failed are left alone.
func (s *Signer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var csr certv1.CertificateSigningRequest
	if err := s.csrs.Get(ctx, req.NamespacedName, &csr); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get CertificateSigningRequest %s: %w", req.Name, err)
	}
	if csr.Spec.SignerName != transfer.SignerName || finished(&csr) {
		return ctrl.Result{}, nil
	}
	certReq, node, no := review(&csr, s.requester)
	approved := hasCondition(&csr, certv1.CertificateApproved)
	var err error
	switch {
	case no != nil && !approved:
		err = s.deny(ctx, &csr, no)
	case no != nil:
		// Approved by someone else: a request that breaks a rule is not signed all the same.
		err = s.fail(ctx, &csr, no)
	default:
		err = s.issue(ctx, &csr, certReq, node, approved)
	}
	if apierrors.IsConflict(err) {
		// The request changed since the cache's copy was made; the newer copy's event brings it back.
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

// review checks a request against the rules of the node certificates: it returns the parsed
// request and its node, or why it is refused.
func review(csr *certv1.CertificateSigningRequest, requester string) (*x509.CertificateRequest, string, *refusal) {
	if csr.Spec.Username != requester {
		return nil, "", &refusal{ReasonNotNodeAgent,
			fmt.Sprintf("requested by %q, not by the node agent's service account %q", csr.Spec.Username, requester)}
	}
	nodes := csr.Spec.Extra[transfer.NodeNameExtra]
	if len(nodes) != 1 || nodes[0] == "" {
		return nil, "", &refusal{ReasonNoNode, fmt.Sprintf(
			"the API server recorded the nodes %q of the requesting Pod (%s), not one: only a request made with "+
				"a Pod-bound service account token proves its node", []string(nodes), transfer.NodeNameExtra)}
	}
	node := nodes[0]
	usages := slices.Clone(csr.Spec.Usages)
	slices.Sort(usages)
	if !slices.Equal(usages, nodeUsages) {
		return nil, "", &refusal{ReasonInvalidRequest,
			fmt.Sprintf("usages %q, not exactly %q", csr.Spec.Usages, nodeUsages)}
	}
	certReq, err := transfer.CheckNodeCSR(csr.Spec.Request, node)
	if err != nil {
		return nil, "", &refusal{ReasonInvalidRequest, fmt.Sprintf("node %s: %v", node, err)}
	}
	return certReq, node, nil
}

// deny sets the request's Denied condition.
func (s *Signer) deny(ctx context.Context, csr *certv1.CertificateSigningRequest, no *refusal) error {
	csr.Status.Conditions = append(csr.Status.Conditions, s.condition(certv1.CertificateDenied, no.reason, no.message))
	if err := s.client.SubResource("approval").Update(ctx, csr); err != nil {
		return fmt.Errorf("deny CertificateSigningRequest %s: %w", csr.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Denied a transfer certificate request", "CertificateSigningRequest", klog.KObj(csr),
		"requester", csr.Spec.Username, "reason", no.reason, "message", no.message)
	return nil
}

// fail sets the request's Failed condition.
func (s *Signer) fail(ctx context.Context, csr *certv1.CertificateSigningRequest, no *refusal) error {
	csr.Status.Conditions = append(csr.Status.Conditions, s.condition(certv1.CertificateFailed, no.reason, no.message))
	if err := s.client.Status().Update(ctx, csr); err != nil {
		return fmt.Errorf("mark CertificateSigningRequest %s failed: %w", csr.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Refused to sign an approved transfer certificate request",
		"CertificateSigningRequest", klog.KObj(csr), "requester", csr.Spec.Username, "reason", no.reason,
		"message", no.message)
	return nil
}

// issue approves the request unless it is approved already, and writes node's certificate into its
// status.
func (s *Signer) issue(ctx context.Context, csr *certv1.CertificateSigningRequest, req *x509.CertificateRequest,
	node string, approved bool,
) error {
	if !approved {
		csr.Status.Conditions = append(csr.Status.Conditions, s.condition(certv1.CertificateApproved, ReasonApproved,
			fmt.Sprintf("requested by the node agent on node %s for its own name", node)))
		if err := s.client.SubResource("approval").Update(ctx, csr); err != nil {
			return fmt.Errorf("approve CertificateSigningRequest %s: %w", csr.Name, err)
		}
	}
	lifetime := transfer.DefaultCertLifetime
	if secs := csr.Spec.ExpirationSeconds; secs != nil {
		lifetime = min(lifetime, time.Duration(*secs)*time.Second)
	}
	cert, err := s.authority.SignNode(req, node, lifetime, s.now())
	if err != nil {
		return s.fail(ctx, csr, &refusal{ReasonSignFailed, err.Error()})
	}
	csr.Status.Certificate = cert
	if err := s.client.Status().Update(ctx, csr); err != nil {
		return fmt.Errorf("write the certificate of CertificateSigningRequest %s: %w", csr.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Issued a node's transfer certificate", "CertificateSigningRequest", klog.KObj(csr),
		"node", node, "lifetime", lifetime)
	return nil
}

func (s *Signer) condition(typ certv1.RequestConditionType, reason, message string,
) certv1.CertificateSigningRequestCondition {
	return certv1.CertificateSigningRequestCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason,
		Message: message, LastUpdateTime: metav1.NewTime(s.now())}
}

// finished reports whether the request needs nothing more: issued, denied or failed.
func finished(csr *certv1.CertificateSigningRequest) bool {
	return hasCondition(csr, certv1.CertificateDenied) || hasCondition(csr, certv1.CertificateFailed) ||
		(hasCondition(csr, certv1.CertificateApproved) && len(csr.Status.Certificate) > 0)
}

func hasCondition(csr *certv1.CertificateSigningRequest, typ certv1.RequestConditionType) bool {
	return slices.ContainsFunc(csr.Status.Conditions, func(c certv1.CertificateSigningRequestCondition) bool {
		return c.Type == typ && c.Status == corev1.ConditionTrue
	})
}
