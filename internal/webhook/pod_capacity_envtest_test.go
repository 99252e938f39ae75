package webhook

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/testing/apiserver"
	"github.com/lvm-operator/lvm-operator/internal/testing/kustomize"
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

// startPodWebhook starts an API server with our CRDs, the VolumeSnapshot CRDs and the component's
// MutatingWebhookConfiguration pointed at a webhook server of this process that serves the pod
// webhook (with a cache indexing LogicalVolumes by volume ID, as the operator's), and returns an
// admin client.
func startPodWebhook(t *testing.T) client.Client {
	t.Helper()
	snapshotCRDs, err := apiserver.SnapshotCRDs()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases"), snapshotCRDs},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			MutatingWebhooks: []*admissionv1.MutatingWebhookConfiguration{componentMutatingConfig(t)},
		},
	}
	cfg := apiserver.Start(t, env)
	s := sourceScheme(t)
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
	if err := mgr.GetCache().IndexField(t.Context(), &topolvmv1.LogicalVolume{}, testVolumeIDIndex,
		func(o client.Object) []string { return []string{o.(*topolvmv1.LogicalVolume).Status.VolumeID} },
	); err != nil {
		t.Fatal(err)
	}
	SetupPodMutator(mgr, testVolumeIDIndex)
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

// withStatus creates obj, then writes status (its status as the API server will hold it) through
// the status subresource.
func withStatus(t *testing.T, k8s client.Client, obj client.Object, status func()) {
	t.Helper()
	create(t, k8s, obj)
	status()
	if err := k8s.Status().Update(t.Context(), obj); err != nil {
		t.Fatalf("update status of %T %s: %v", obj, obj.GetName(), err)
	}
}

// createSources creates, in namespace app, what the claims "restored" (from the VolumeSnapshot
// snap, whose LogicalVolume is on node-a) and "cloned" (from the claim src, whose volume's
// LogicalVolume is on node-c) are made from, and those two claims, as the snapshot controller,
// the CSI driver and a user leave them.
func createSources(t *testing.T, k8s client.Client) {
	t.Helper()
	for _, lv := range []*topolvmv1.LogicalVolume{
		logicalVolume("snap-a-lv", "node-a", "snap-a-id"), logicalVolume("vol-c-lv", "node-c", "vol-c-id"),
	} {
		lv.Spec.Size = resource.MustParse("1Gi")
		id := lv.Status.VolumeID
		withStatus(t, k8s, lv, func() { lv.Status.VolumeID = id })
	}
	content := snapshotContent("content-a", driver.Name, "")
	content.Object["spec"] = map[string]any{
		"driver": driver.Name, "deletionPolicy": "Retain", "source": map[string]any{"snapshotHandle": "snap-a-id"},
		"volumeSnapshotRef": map[string]any{"namespace": "app", "name": "snap"},
	}
	withStatus(t, k8s, content, func() { content.Object["status"] = map[string]any{"snapshotHandle": "snap-a-id"} })
	snap := volumeSnapshot("app", "snap", "")
	snap.Object["spec"] = map[string]any{"source": map[string]any{"volumeSnapshotContentName": "content-a"}}
	withStatus(t, k8s, snap, func() {
		snap.Object["status"] = map[string]any{"boundVolumeSnapshotContentName": "content-a", "readyToUse": true}
	})
	pv := csiVolume("pv-c", driver.Name, "vol-c-id")
	pv.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	src := pvcObject("app", "src", "lvms-ssd", "1Gi")
	src.Spec.VolumeName = "pv-c"
	restored, cloned := pvcObject("app", "restored", "lvms-ssd", "1Gi"), pvcObject("app", "cloned", "lvms-ssd", "1Gi")
	restored.Spec.DataSource = &corev1.TypedLocalObjectReference{
		APIGroup: ptr.To(snapshotGroup), Kind: "VolumeSnapshot", Name: "snap",
	}
	cloned.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
	create(t, k8s, pv, src, restored, cloned)
}

// TestPodWebhookWithAPIServer creates pods through a real API server with the component's webhook
// configuration: pods with unbound topolvm.io claims (persistent and generic ephemeral) get the
// capacity annotations and the topolvm.io/capacity resource, and, when the claims restore a
// VolumeSnapshot or clone a claim, the nodes of those sources; pods without such claims, with a
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
	createSources(t, k8s)
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
		{"a restore and a clone", "app", claimPod("restored", "cloned", "data"), map[string]string{
			"capacity.topolvm.io/ssd": "7516192768", "lvms.topolvm.io/source-nodes": "node-a,node-c",
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
