//go:build !guest

package operator

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
	"github.com/lvm-operator/lvm-operator/internal/snapmeta"
	"github.com/lvm-operator/lvm-operator/internal/testing/apiserver"
)

// TestSnapshotMetadataSetup runs the operator's --snapshot-metadata part against a real API server:
// the three Secrets are created if missing and get certificates with the usage and names their users check (the node agents'
// ServerName, the proxy's client usage, the sidecar's Service names), each from a CA of its own,
// and the SnapshotMetadataService carries the sidecar's address, audience and CA.
func TestSnapshotMetadataSetup(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cfg := apiserver.Start(t, nil)
	scheme := testScheme(t)
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns := "lvms-system"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	createSMSCRD(ctx, t, k8s)
	// The install ships no Secrets: the operator creates them empty, and the rotators fill them. A
	// Secret that exists (an install of the last release shipped them) is kept.
	if err := k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: lvmcluster.SnapshotMetadataClientCert},
	}); err != nil {
		t.Fatal(err)
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Namespace: ns, WebhookSelfCertDir: t.TempDir(), SnapshotMetadata: true}
	if err := setupSnapshotMetadata(ctx, mgr, o); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	cas := map[string]bool{}
	for _, want := range []struct {
		secret string
		usage  x509.ExtKeyUsage
		names  []string
	}{
		{lvmcluster.SnapshotMetadataNodeCert, x509.ExtKeyUsageServerAuth, []string{snapmeta.ServerName}},
		{lvmcluster.SnapshotMetadataClientCert, x509.ExtKeyUsageClientAuth, nil},
		{lvmcluster.SnapshotMetadataServerCert, x509.ExtKeyUsageServerAuth,
			[]string{"lvms-snapshot-metadata.lvms-system.svc", "lvms-snapshot-metadata.lvms-system"}},
	} {
		data := waitSecret(ctx, t, k8s, types.NamespacedName{Namespace: ns, Name: want.secret})
		leaf, ca := parsePEM(t, data["tls.crt"]), parsePEM(t, data["ca.crt"])
		if !slices.Contains(leaf.ExtKeyUsage, want.usage) {
			t.Errorf("%s: usages %v lack %v", want.secret, leaf.ExtKeyUsage, want.usage)
		}
		for _, n := range want.names {
			if err := leaf.VerifyHostname(n); err != nil {
				t.Errorf("%s: %v", want.secret, err)
			}
		}
		if err := leaf.CheckSignatureFrom(ca); err != nil {
			t.Errorf("%s: not signed by its ca.crt: %v", want.secret, err)
		}
		cas[string(ca.Raw)] = true
	}
	if len(cas) != 3 {
		t.Errorf(
			"the three certificates come from %d CAs, want 3 (a node's key pair must not make client certificates)",
			len(cas),
		)
	}

	server := waitSecret(ctx, t, k8s, types.NamespacedName{Namespace: ns, Name: lvmcluster.SnapshotMetadataServerCert})
	sms := &unstructured.Unstructured{}
	sms.SetGroupVersionKind(snapshotMetadataGVK)
	deadline := time.Now().Add(time.Minute)
	for {
		err := k8s.Get(ctx, types.NamespacedName{Name: "topolvm.io"}, sms)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no SnapshotMetadataService topolvm.io: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	spec, _, _ := unstructured.NestedStringMap(sms.Object, "spec")
	ca, _ := base64.StdEncoding.DecodeString(spec["caCert"])
	if spec["address"] != "lvms-snapshot-metadata.lvms-system:6443" || spec["audience"] != "topolvm.io" ||
		string(ca) != string(server["ca.crt"]) {
		t.Errorf("SnapshotMetadataService spec %v, want the sidecar's address, audience topolvm.io and its CA", spec)
	}
}

// createSMSCRD installs a minimal CRD of the SnapshotMetadataService kind (the real one comes with
// external-snapshot-metadata) and waits until it is served.
func createSMSCRD(ctx context.Context, t *testing.T, k8s client.Client) {
	t.Helper()
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "snapshotmetadataservices.cbt.storage.k8s.io",
			// k8s.io groups need it; the real CRD carries its KEP's link.
			Annotations: map[string]string{"api-approved.kubernetes.io": "unapproved, test only"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "cbt.storage.k8s.io", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:   "snapshotmetadataservices",
				Singular: "snapshotmetadataservice",
				Kind:     "SnapshotMetadataService",
				ListKind: "SnapshotMetadataServiceList",
			},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
	if err := k8s.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(snapshotMetadataGVK.GroupVersion().WithKind("SnapshotMetadataServiceList"))
		if err := k8s.List(ctx, list); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the SnapshotMetadataService CRD is not served")
}

func waitSecret(ctx context.Context, t *testing.T, k8s client.Client, key types.NamespacedName) map[string][]byte {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var s corev1.Secret
		err := k8s.Get(ctx, key, &s)
		if err == nil && len(s.Data["tls.crt"]) > 0 && len(s.Data["ca.crt"]) > 0 {
			return s.Data
		}
		if time.Now().After(deadline) {
			t.Fatalf("Secret %s has no certificate: %v", key, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func parsePEM(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
