//go:build !guest

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lvm-operator/lvm-operator/internal/testing/apiserver"
	"github.com/lvm-operator/lvm-operator/internal/tlsprofile"
)

const (
	metricsTestNamespace = "lvms-system"
	// metricsReaderRole is the ClusterRole of config/rbac/metrics_reader_role.yaml.
	metricsReaderRole = "lvms-metrics-reader"
	// profileReaderRole is the ClusterRole of config/rbac/profile_reader_role.yaml.
	profileReaderRole = "lvms-profile-reader"
	// markerMetric is registered by the test so that a served /metrics is recognised.
	markerMetric = "lvms_metrics_test_marker"
)

// rbacFiles are the install's RBAC objects the test applies: the generated roles of the operator
// and the node agent, the reader ClusterRole, the service accounts and their bindings.
var rbacFiles = []string{
	"operator/role.yaml", "node/role.yaml", "metrics_reader_role.yaml", "profile_reader_role.yaml",
	"service_accounts.yaml", "role_bindings.yaml",
}

// TestMetricsEndpointAuthorization starts the metrics server as the operator and as the node agent
// configure it (metricsOptions), each authenticating with its own service account and the RBAC the
// install gives it, against a real API server; then only a client whose service account is bound
// to lvms-metrics-reader reads /metrics, and only over HTTPS.
func TestMetricsEndpointAuthorization(t *testing.T) {
	cfg := apiserver.Start(t, nil)
	k8s, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metricsTestNamespace}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	for _, f := range rbacFiles {
		applyFile(ctx, t, k8s, filepath.Join("..", "..", "config", "rbac", f))
	}
	for _, sa := range []string{"scraper", "stranger", "profiler"} {
		obj := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metricsTestNamespace, Name: sa}}
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	bindClusterRole(ctx, t, k8s, metricsReaderRole, "scraper")
	bindClusterRole(ctx, t, k8s, profileReaderRole, "profiler")
	registerMarkerMetric(t)
	scraper, stranger := saToken(ctx, t, k8s, "scraper"), saToken(ctx, t, k8s, "stranger")
	profiler := saToken(ctx, t, k8s, "profiler")

	for _, server := range []struct{ name, serviceAccount string }{
		{name: "operator", serviceAccount: "lvms-operator"},
		{name: "node agent", serviceAccount: "lvms-node"},
	} {
		t.Run(server.name, func(t *testing.T) {
			identity := rest.AnonymousClientConfig(cfg)
			identity.BearerToken = saToken(ctx, t, k8s, server.serviceAccount)
			for _, profiling := range []bool{false, true} {
				opts, err := metricsOptions("127.0.0.1:0", "", profiling, tlsprofile.Profile{})
				if err != nil {
					t.Fatal(err)
				}
				addr := startMetricsServer(t, opts, identity)
				checkScrapes(t, addr, scraper, stranger)
				checkProfiles(t, addr, profiling, scraper, stranger, profiler)
			}
		})
	}
}

// bindClusterRole binds the ClusterRole to a service account of the test namespace.
func bindClusterRole(ctx context.Context, t *testing.T, k8s client.Client, role, serviceAccount string) {
	t.Helper()
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: serviceAccount + "-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.ServiceAccountKind, Namespace: metricsTestNamespace, Name: serviceAccount},
		},
	}
	if err := k8s.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
}

// checkProfiles requests the heap profile from the server at addr: only with profiling, and then
// only for a service account bound to lvms-profile-reader (a metrics reader is refused).
func checkProfiles(t *testing.T, addr string, profiling bool, scraper, stranger, profiler string) {
	t.Helper()
	tests := []struct {
		name, token string
		wantStatus  int
	}{
		{name: "no token", wantStatus: http.StatusUnauthorized},
		{name: "bound to " + metricsReaderRole, token: scraper, wantStatus: http.StatusForbidden},
		{name: "bound to nothing", token: stranger, wantStatus: http.StatusForbidden},
		{name: "bound to " + profileReaderRole, token: profiler, wantStatus: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("profiling=%v/%s", profiling, tt.name), func(t *testing.T) {
			status, body, err := scrape(t.Context(), "https://"+addr+profilePath+"heap?debug=1", tt.token)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.wantStatus
			if !profiling {
				want = http.StatusNotFound
			}
			if status != want {
				t.Fatalf("status %d, want %d; body %.200q", status, want, body)
			}
			if served := strings.Contains(body, "heap profile:"); served != (status == http.StatusOK) {
				t.Fatalf("status %d, body is a heap profile: %v", status, served)
			}
		})
	}
}

// checkScrapes requests /metrics from the server at addr as the clients a user meets.
func checkScrapes(t *testing.T, addr, readerToken, strangerToken string) {
	t.Helper()
	tests := []struct {
		name, scheme, token string
		wantStatus          int // 0: refused, whatever the answer (if any)
	}{
		{name: "no token", scheme: "https", wantStatus: http.StatusUnauthorized},
		// controller-runtime's filter answers 500 when the TokenReview rejects the token.
		{name: "a token the API server did not issue", scheme: "https", token: "not-a-token"},
		{name: "service account not bound to " + metricsReaderRole, scheme: "https", token: strangerToken,
			wantStatus: http.StatusForbidden},
		{name: "service account bound to " + metricsReaderRole, scheme: "https", token: readerToken,
			wantStatus: http.StatusOK},
		{name: "plain HTTP", scheme: "http", token: readerToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, err := scrape(t.Context(), tt.scheme+"://"+addr+"/metrics", tt.token)
			if tt.wantStatus == 0 {
				if (err == nil && status == http.StatusOK) || strings.Contains(body, markerMetric) {
					t.Fatalf("metrics served: status %d", status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if status != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %q", status, tt.wantStatus, body)
			}
			if served := strings.Contains(body, markerMetric); served != (status == http.StatusOK) {
				t.Fatalf("status %d, body has metric %s: %v", status, markerMetric, served)
			}
		})
	}
}

func scrape(ctx context.Context, url, token string) (status int, body string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		// The server's certificate is self-signed, as in production without --metrics-cert-dir.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// applyFile creates the objects of a multi-document YAML file, the namespaced ones in the test
// namespace (as kustomize puts them in the install's).
func applyFile(ctx context.Context, t *testing.T, k8s client.Client, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if namespaced, err := k8s.IsObjectNamespaced(u); err != nil {
			t.Fatalf("%s: %s %s: %v", path, u.GetKind(), u.GetName(), err)
		} else if namespaced {
			u.SetNamespace(metricsTestNamespace)
		}
		if err := k8s.Create(ctx, u); err != nil {
			t.Fatalf("%s: create %s %s: %v", path, u.GetKind(), u.GetName(), err)
		}
	}
}

// saToken issues a token of a service account of the test namespace (TokenRequest API).
func saToken(ctx context.Context, t *testing.T, k8s client.Client, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metricsTestNamespace, Name: name}}
	tr := &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}
	if err := k8s.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("token of service account %s: %v", name, err)
	}
	return tr.Status.Token
}

// registerMarkerMetric puts markerMetric into the registry the metrics server serves.
func registerMarkerMetric(t *testing.T) {
	t.Helper()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: markerMetric, Help: "Set by the metrics test."})
	g.Set(1)
	if err := ctrlmetrics.Registry.Register(g); err != nil {
		if are := (prometheus.AlreadyRegisteredError{}); !errors.As(err, &are) {
			t.Fatal(err)
		}
	}
}
