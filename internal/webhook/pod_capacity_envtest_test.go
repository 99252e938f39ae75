package webhook

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/lvm-operator/lvm-operator/internal/testing/kustomize"

	"github.com/lvm-operator/lvm-operator/internal/testing/apiserver"
)

// componentMutatingConfig returns the MutatingWebhookConfiguration of config/default with the
// scheduler-extender component, as a user's overlay builds it.
func componentMutatingConfig(t *testing.T) *admissionv1.MutatingWebhookConfiguration {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	overlay := t.TempDir()
	// kustomize refuses absolute paths to other kustomizations.
	base, err := filepath.Rel(overlay, filepath.Join(root, "config"))
	if err != nil {
		t.Fatal(err)
	}
	k := "resources:\n- " + filepath.Join(base, "default") +
		"\ncomponents:\n- " + filepath.Join(base, "components", "scheduler-extender") + "\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := kustomize.Build(overlay)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kustomize.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "MutatingWebhookConfiguration" {
			cfg := &admissionv1.MutatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cfg); err != nil {
				t.Fatal(err)
			}
			return cfg
		}
	}
	t.Fatal("no MutatingWebhookConfiguration in the build")
	return nil
}

// startPodWebhook starts an API server with the component's MutatingWebhookConfiguration pointed
// at a webhook server of this process that serves the pod webhook, and returns an admin client.
func startPodWebhook(t *testing.T) client.Client {
	t.Helper()
	env := &envtest.Environment{WebhookInstallOptions: envtest.WebhookInstallOptions{
		MutatingWebhooks: []*admissionv1.MutatingWebhookConfiguration{componentMutatingConfig(t)},
	}}
	cfg := apiserver.Start(t, env)
	s := testScheme(t)
	wh := env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  s,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{
			Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir,
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	SetupPodMutator(mgr)
	go func() {
		if err := mgr.Start(t.Context()); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	k8s, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return k8s
}

func create(t *testing.T, k8s client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := k8s.Create(t.Context(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

func pvcObject(namespace, name, sc, size string) *corev1.PersistentVolumeClaim {
	spec := claimSpec(sc, size)
	spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
}

func ephemeral(name, sc, size string) corev1.Volume {
	spec := claimSpec(sc, size)
	spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: spec},
	}}}
}

// TestPodWebhookWithAPIServer creates pods through a real API server with the component's webhook
// configuration: pods with unbound topolvm.io claims (persistent and generic ephemeral) get the
// capacity annotations and the topolvm.io/capacity resource; pods without such claims, with a
// bound one, or in a namespace labelled topolvm.io/webhook=ignore are stored as sent.
func TestPodWebhookWithAPIServer(t *testing.T) {
	k8s := startPodWebhook(t)
	bound := pvcObject("app", "bound", "lvms-ssd", "1Gi")
	create(
		t,
		k8s,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: "quiet", Labels: map[string]string{"topolvm.io/webhook": "ignore"}},
		},
		storageClass("lvms-ssd", "topolvm.io", map[string]string{"topolvm.io/device-class": "ssd"}),
		storageClass("lvms-default", "topolvm.io", nil),
		storageClass("other", "example.com/other", nil),
		pvcObject("app", "data", "lvms-ssd", "5Gi"),
		pvcObject("app", "logs", "lvms-ssd", "3Gi"),
		pvcObject("app", "foreign", "other", "1Gi"),
		bound,
		pvcObject("quiet", "data", "lvms-ssd", "5Gi"),
	)
	bound.Status.Phase = corev1.ClaimBound
	if err := k8s.Status().Update(t.Context(), bound); err != nil {
		t.Fatal(err)
	}
	withEphemeral := claimPod("data", "logs", "missing")
	withEphemeral.Spec.Volumes = append(withEphemeral.Spec.Volumes, ephemeral("scratch", "lvms-default", "2Gi"))
	tests := []struct {
		name, namespace string
		pod             *corev1.Pod
		want            map[string]string
	}{
		{"claims and an ephemeral volume", "app", withEphemeral, map[string]string{
			"capacity.topolvm.io/ssd": "8589934592", "capacity.topolvm.io/00default": "2147483648",
		}},
		{"claim of another driver", "app", claimPod("foreign"), nil},
		{"a bound topolvm.io claim", "app", claimPod("data", "bound"), nil},
		{"namespace opted out", "quiet", claimPod("data"), nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod
			pod.Namespace, pod.Name = tt.namespace, "pod-"+string(rune('a'+i))
			pod.Spec.Containers[0].Image = "busybox"
			createWhenServed(t, k8s, pod)
			got := &corev1.Pod{}
			if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(pod), got); err != nil {
				t.Fatal(err)
			}
			q, hasResource := got.Spec.Containers[0].Resources.Requests[CapacityResource]
			l := got.Spec.Containers[0].Resources.Limits[CapacityResource]
			if tt.want == nil {
				if hasResource || len(got.Annotations) != 0 {
					t.Errorf(
						"pod changed: annotations %v, requests %v",
						got.Annotations,
						got.Spec.Containers[0].Resources,
					)
				}
				return
			}
			for k, v := range tt.want {
				if got.Annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q (all: %v)", k, got.Annotations[k], v, got.Annotations)
				}
			}
			if q.Value() != 1 || l.Value() != 1 {
				t.Errorf("topolvm.io/capacity request %v limit %v, want 1", q.String(), l.String())
			}
		})
	}
}

// createWhenServed creates the pod once the webhook server answers: the failure policy is Ignore,
// so a pod created before it serves would be stored unchanged.
func createWhenServed(t *testing.T, k8s client.Client, pod *corev1.Pod) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		probe := claimPod("data")
		probe.Namespace, probe.Name = "app", "probe"
		probe.Spec.Containers[0].Image = "busybox"
		err := k8s.Create(t.Context(), probe, client.DryRunAll)
		if err == nil && probe.Annotations["capacity.topolvm.io/ssd"] != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod webhook does not answer: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	create(t, k8s, pod)
}
