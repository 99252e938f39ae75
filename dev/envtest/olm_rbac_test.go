package envtest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/lvm-operator/lvm-operator/dev/internal/rbacdoc"
)

// olmRBAC is the RBAC an OLM install of bundle/ creates in testNamespace, made the way OLM makes it
// from the ClusterServiceVersion: per service account, a ClusterRole and ClusterRoleBinding of its
// clusterPermissions and a Role and RoleBinding of its permissions, and the service accounts.
func olmRBAC(t *testing.T) *rbacdoc.Set {
	t.Helper()
	raw, err := os.ReadFile(
		filepath.Join("..", "..", "bundle", "manifests", "lvms-operator.clusterserviceversion.yaml"),
	)
	if err != nil {
		t.Fatal(err)
	}
	var csv operatorsv1alpha1.ClusterServiceVersion
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		t.Fatalf("decode the CSV: %v", err)
	}
	spec := csv.Spec.InstallStrategy.StrategySpec
	var stream bytes.Buffer
	add := func(obj any) {
		b, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		stream.WriteString("---\n")
		stream.Write(b)
	}
	accounts := map[string]bool{}
	subject := func(sa string) []rbacv1.Subject {
		accounts[sa] = true
		return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: testNamespace}}
	}
	for _, p := range spec.ClusterPermissions {
		name := "olm-" + p.ServiceAccountName
		add(
			&rbacv1.ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Rules:      p.Rules,
			},
		)
		add(&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   subject(p.ServiceAccountName),
		})
	}
	for _, p := range spec.Permissions {
		name := "olm-" + p.ServiceAccountName
		meta := metav1.ObjectMeta{Name: name, Namespace: testNamespace}
		add(&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: meta, Rules: p.Rules})
		add(&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: meta,
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   subject(p.ServiceAccountName),
		})
	}
	for sa := range accounts {
		add(&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: testNamespace}})
	}
	set, err := rbacdoc.Decode(stream.Bytes(), testNamespace)
	if err != nil {
		t.Fatalf("the CSV's RBAC: %v", err)
	}
	return set
}
