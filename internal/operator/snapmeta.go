package operator

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/snapmeta"
)

// snapshotMetadataService is the name of the external-snapshot-metadata sidecar's Service, in the
// operator namespace; the SnapshotMetadataService object points backup clients at it.
const snapshotMetadataService = lvmcluster.SnapshotMetadataName

// snapshotMetadataGVK is the kind of the object the sidecar finds its address and CA in (the
// external-snapshot-metadata CRD; the cluster admin installs it as with the snapshot CRDs).
var snapshotMetadataGVK = schema.GroupVersionKind{
	Group: "cbt.storage.k8s.io", Version: "v1alpha1", Kind: "SnapshotMetadataService",
}

// setupSnapshotMetadata issues the certificates of changed block tracking, each from a CA of its own
// kept in its Secret (the node agents' serving certificate, the proxy's client certificate, the
// sidecar's serving certificate), and keeps the SnapshotMetadataService object current with the
// sidecar's CA.
func setupSnapshotMetadata(ctx context.Context, mgr ctrl.Manager, o Options) error {
	svcDNS := fmt.Sprintf("%s.%s.svc", snapshotMetadataService, o.Namespace)
	for _, c := range []struct {
		secret, dns string
		extra       []string
		usage       x509.ExtKeyUsage
	}{
		{lvmcluster.SnapshotMetadataNodeCert, snapmeta.ServerName, nil, x509.ExtKeyUsageServerAuth},
		{lvmcluster.SnapshotMetadataClientCert, "lvms-snapshot-metadata-client", nil, x509.ExtKeyUsageClientAuth},
		{lvmcluster.SnapshotMetadataServerCert, svcDNS,
			[]string{snapshotMetadataService + "." + o.Namespace, snapshotMetadataService}, x509.ExtKeyUsageServerAuth},
	} {
		key := types.NamespacedName{Namespace: o.Namespace, Name: c.secret}
		if err := ensureSecret(ctx, mgr.GetClient(), key); err != nil {
			return err
		}
		// The rotator waits for its certificate file; only the certificate is copied, no key.
		dir := filepath.Join(o.WebhookSelfCertDir, c.secret)
		if err := mgr.Add(certFiles{reader: mgr.GetAPIReader(), secret: key, dir: dir, poll: time.Second,
			refresh: time.Minute, names: []string{corev1.TLSCertKey}, what: c.secret}); err != nil {
			return fmt.Errorf("add certificate copier of %s: %w", c.secret, err)
		}
		usages := []x509.ExtKeyUsage{c.usage}
		if err := rotator.AddRotator(mgr, &rotator.CertRotator{
			SecretKey: key, CertDir: dir, CAName: c.secret + "-ca", CAOrganization: "lvms",
			DNSName: c.dns, ExtraDNSNames: c.extra, IsReady: make(chan struct{}), ExtKeyUsages: &usages,
			FieldOwner: lvmcluster.FieldOwner, ControllerName: "cert-rotator-" + c.secret,
		}); err != nil {
			return fmt.Errorf("set up rotation of %s: %w", c.secret, err)
		}
	}
	sync := smsSync{
		reader: mgr.GetAPIReader(), writer: mgr.GetClient(),
		secret:  types.NamespacedName{Namespace: o.Namespace, Name: lvmcluster.SnapshotMetadataServerCert},
		address: fmt.Sprintf("%s.%s:6443", snapshotMetadataService, o.Namespace), every: 30 * time.Second,
	}
	if err := mgr.Add(sync); err != nil {
		return fmt.Errorf("add SnapshotMetadataService sync: %w", err)
	}
	return nil
}

// ensureSecret creates the empty Secret key if it does not exist: the rotator fills a Secret, and does
// not create one.
func ensureSecret(ctx context.Context, c client.Client, key types.NamespacedName) error {
	sec := &corev1.Secret{Type: corev1.SecretTypeOpaque}
	sec.Namespace, sec.Name = key.Namespace, key.Name
	sec.Labels = map[string]string{lvmcluster.LabelManagedBy: lvmcluster.FieldOwner}
	if err := c.Create(ctx, sec, client.FieldOwner(lvmcluster.FieldOwner)); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret %s: %w", key, err)
	}
	return nil
}

// smsSync applies the SnapshotMetadataService named after the driver: the sidecar's address, the
// audience backup clients ask tokens for, and the CA of the sidecar's serving certificate.
type smsSync struct {
	reader  client.Reader
	writer  client.Client
	secret  types.NamespacedName
	address string
	every   time.Duration
}

// NeedLeaderElection is true: one replica writes the object.
func (smsSync) NeedLeaderElection() bool { return true }

// Start applies the object once the CA exists and again whenever it changes, until ctx ends.
func (s smsSync) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("snapshot-metadata-service")
	applied := ""
	for {
		ca, err := s.ca(ctx)
		if err == nil && ca != "" && ca != applied {
			if err = s.apply(ctx, ca); err == nil {
				applied = ca
				log.Info("Applied the SnapshotMetadataService", "name", driver.Name, "address", s.address)
			}
		}
		if err != nil && ctx.Err() == nil {
			log.Error(err, "Keeping the SnapshotMetadataService current failed; retrying")
		}
		wait := s.every
		if applied == "" {
			wait = min(wait, 2*time.Second) // until the first apply: the install is waiting for it
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// ca is the sidecar CA's certificate (PEM), "" until it is issued.
func (s smsSync) ca(ctx context.Context) (string, error) {
	var sec corev1.Secret
	if err := s.reader.Get(ctx, s.secret, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("get Secret %s: %w", s.secret, err)
	}
	return string(sec.Data["ca.crt"]), nil
}

func (s smsSync) apply(ctx context.Context, caPEM string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(snapshotMetadataGVK)
	u.SetName(driver.Name)
	u.Object["spec"] = map[string]any{
		"address":  s.address,
		"audience": driver.Name,
		"caCert":   base64.StdEncoding.EncodeToString([]byte(caPEM)),
	}
	if err := s.writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(lvmcluster.FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply SnapshotMetadataService %s (is the CRD of external-snapshot-metadata installed?): %w",
			driver.Name, err)
	}
	return nil
}
