package operator

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestCertFilesCopiesTheServingPair: nothing is written before the rotator issued a certificate;
// then the serving pair, and only it (the CA key stays in the Secret), is copied and follows a renewal.
func TestCertFilesCopiesTheServingPair(t *testing.T) {
	key := types.NamespacedName{Namespace: "lvms-system", Name: "lvms-webhook-server-cert"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	c := fake.NewClientBuilder().WithObjects(secret).Build()
	dir := filepath.Join(t.TempDir(), "certs")
	cf := certFiles{reader: c, secret: key, dir: dir}

	if ok, err := cf.sync(t.Context()); ok || err != nil {
		t.Fatalf("empty Secret: sync = %v, %v; want nothing to copy", ok, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a directory was made before there was a certificate: %v", err)
	}
	for i, cert := range []string{"CERT-1", "CERT-2"} {
		secret.Data = map[string][]byte{"tls.crt": []byte(cert), "tls.key": []byte("KEY"), "ca.crt": []byte("CA"),
			"ca.key": []byte("CA-KEY")}
		if err := c.Update(t.Context(), secret); err != nil {
			t.Fatal(err)
		}
		if ok, err := cf.sync(t.Context()); !ok || err != nil {
			t.Fatalf("round %d: sync = %v, %v", i, ok, err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
		if err != nil || string(got) != cert {
			t.Fatalf("round %d: tls.crt = %q, %v; want %q", i, got, err, cert)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if info, err := e.Info(); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", e.Name(), info.Mode(), err)
		}
	}
	if len(names) != 2 || names[0] != "tls.crt" || names[1] != "tls.key" {
		t.Errorf("files %v, want exactly tls.crt and tls.key", names)
	}
}
