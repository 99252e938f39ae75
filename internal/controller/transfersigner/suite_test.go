package transfersigner_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lvm-operator/lvm-operator/internal/controller/transfersigner"
)

const (
	operatorNamespace = "lvms-system"
	// nodeAgent and operator are the users of the two service accounts.
	nodeAgent = "system:serviceaccount:lvms-system:lvms-node"
	operator  = "system:serviceaccount:lvms-system:lvms-operator"
	// fieldOwner is the operator's (lvmcluster.FieldOwner).
	fieldOwner = "lvms-operator"
)

var (
	// k8s is the admin's client.
	k8s     client.Client
	scheme  *runtime.Scheme
	restCfg *rest.Config
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set; run `make test-unit`")
		return 1
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest: %v\n", err)
		_ = env.Stop()
		return 1
	}
	defer func() { _ = env.Stop() }()
	restCfg = cfg
	scheme = runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := setup(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// setup installs the namespace and the operator's and node agent's RBAC as the install has them, lets service
// accounts create requests, and starts the signer as the operator's service account.
func setup(ctx context.Context, cfg *rest.Config) error {
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		return err
	}
	root := filepath.Join("..", "..", "..", "config", "rbac")
	for _, f := range []string{
		filepath.Join(root, "operator", "role.yaml"), filepath.Join(root, "node", "role.yaml"),
		filepath.Join(root, "role_bindings.yaml"),
	} {
		if err := createAll(ctx, f); err != nil {
			return err
		}
	}
	if err := allowRequests(ctx); err != nil {
		return err
	}
	return startManager(ctx, as(cfg, operator, nil))
}

// createAll creates every object of a YAML file; namespaced RBAC objects without a namespace (the
// install's kustomization sets it) go to the operator namespace.
func createAll(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		u := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &u.Object); err != nil {
			return fmt.Errorf("decode %s: %w", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if (u.GetKind() == "Role" || u.GetKind() == "RoleBinding") && u.GetNamespace() == "" {
			u.SetNamespace(operatorNamespace)
		}
		if err := k8s.Create(ctx, u); err != nil {
			return fmt.Errorf("create %s %s from %s: %w", u.GetKind(), u.GetName(), path, err)
		}
	}
}

// allowRequests lets every service account create and read CertificateSigningRequests, so that
// requests of other service accounts than the node agent's reach the signer.
func allowRequests(ctx context.Context) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-csr-requester"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{certv1.GroupName},
			Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get"}}}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-csr-requester"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts"},
		},
	}
	for _, o := range []client.Object{role, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// as returns cfg impersonating the service account user, with the node-name extra the API server
// sets from a Pod-bound token when extra is not nil.
func as(cfg *rest.Config, user string, extra map[string][]string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{
		UserName: user,
		Extra:    extra,
		Groups: []string{
			"system:serviceaccounts",
			"system:serviceaccounts:" + operatorNamespace,
			"system:authenticated",
		},
	}
	return c
}

// startManager runs the signer as the operator does.
func startManager(ctx context.Context, cfg *rest.Config) error {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(logSink())))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	_, err = transfersigner.Setup(ctx, mgr, transfersigner.Options{Namespace: operatorNamespace,
		NodeServiceAccount: "lvms-node", FieldOwner: fieldOwner})
	if err != nil {
		return fmt.Errorf("setup signer: %w", err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager stopped: %v\n", err)
		}
	}()
	return nil
}

// logSink keeps controller logs quiet unless LVMS_TEST_VERBOSE is set.
func logSink() io.Writer {
	if os.Getenv("LVMS_TEST_VERBOSE") != "" {
		return os.Stderr
	}
	return io.Discard
}

// eventually retries check until it returns nil or the timeout passes.
func eventually(t *testing.T, what string, check func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true,
		func(ctx context.Context) (bool, error) {
			last = check(ctx)
			return last == nil, nil
		})
	if err != nil {
		t.Fatalf("%s: %v (last: %v)", what, err, last)
	}
}
