package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func storageClass(name, provisioner string, params map[string]string) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: name},
		Provisioner: provisioner,
		Parameters:  params,
	}
}

// claimSpec is a claim spec of class sc asking for size ("" asks for nothing).
func claimSpec(sc, size string) corev1.PersistentVolumeClaimSpec {
	spec := corev1.PersistentVolumeClaimSpec{}
	if sc != "-" {
		spec.StorageClassName = ptr.To(sc)
	}
	if size != "" {
		spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
	}
	return spec
}

func TestCapacityRequests(t *testing.T) {
	classes := map[string]*storagev1.StorageClass{
		"ssd":     storageClass("ssd", "topolvm.io", map[string]string{"topolvm.io/device-class": "ssd"}),
		"hdd":     storageClass("hdd", "topolvm.io", map[string]string{"topolvm.io/device-class": "hdd"}),
		"default": storageClass("default", "topolvm.io", nil),
		"empty":   storageClass("empty", "topolvm.io", map[string]string{"topolvm.io/device-class": ""}),
		"nfs":     storageClass("nfs", "nfs.csi.k8s.io", map[string]string{"topolvm.io/device-class": "ssd"}),
		"missing": nil,
	}
	tests := []struct {
		name   string
		claims []podClaim
		want   map[string]int64
	}{
		{
			name:   "claims of one class are summed",
			claims: []podClaim{{spec: claimSpec("ssd", "1Gi")}, {spec: claimSpec("ssd", "512Mi")}},
			want:   map[string]int64{"ssd": 3 << 29},
		},
		{
			name: "several classes",
			claims: []podClaim{
				{spec: claimSpec("ssd", "1Gi")}, {spec: claimSpec("hdd", "10G")}, {spec: claimSpec("nfs", "5Gi")},
			},
			want: map[string]int64{"ssd": 1 << 30, "hdd": 10_000_000_000},
		},
		{
			name:   "no device-class parameter, or an empty one, is the default class",
			claims: []podClaim{{spec: claimSpec("default", "1Gi")}, {spec: claimSpec("empty", "2Gi")}},
			want:   map[string]int64{"00default": 3 << 30},
		},
		{
			name:   "no or zero request counts as 1 GiB",
			claims: []podClaim{{spec: claimSpec("ssd", "")}, {spec: claimSpec("ssd", "0")}},
			want:   map[string]int64{"ssd": 2 << 30},
		},
		{
			name: "other drivers, missing classes and claims without a class do not count",
			claims: []podClaim{
				{spec: claimSpec("nfs", "1Gi")}, {spec: claimSpec("missing", "1Gi")},
				{spec: claimSpec("-", "1Gi")}, {spec: claimSpec("unknown", "1Gi")},
			},
			want: map[string]int64{},
		},
		{
			name:   "a bound topolvm.io claim fixes the node: no requests",
			claims: []podClaim{{spec: claimSpec("ssd", "1Gi")}, {spec: claimSpec("hdd", "1Gi"), bound: true}},
			want:   nil,
		},
		{
			name:   "a bound claim of another driver does not",
			claims: []podClaim{{spec: claimSpec("ssd", "1Gi")}, {spec: claimSpec("nfs", "1Gi"), bound: true}},
			want:   map[string]int64{"ssd": 1 << 30},
		},
		{
			name:   "sums saturate",
			claims: []podClaim{{spec: claimSpec("ssd", "8Ei")}, {spec: claimSpec("ssd", "8Ei")}},
			want:   map[string]int64{"ssd": math.MaxInt64},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := capacityRequests(tt.claims, classes)
			if (got == nil) != (tt.want == nil) || !maps.Equal(got, tt.want) {
				t.Errorf("requests %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSetCapacityRequests(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"keep": "me"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			}},
			{Name: "sidecar"},
		}},
	}
	setCapacityRequests(pod, map[string]int64{"ssd": 5 << 30, "00default": 1})
	want := map[string]string{
		"keep": "me", "capacity.topolvm.io/ssd": "5368709120", "capacity.topolvm.io/00default": "1",
	}
	if !maps.Equal(pod.Annotations, want) {
		t.Errorf("annotations %v, want %v", pod.Annotations, want)
	}
	app := pod.Spec.Containers[0].Resources
	if q := app.Requests[CapacityResource]; q.Value() != 1 || app.Requests.Cpu().Value() != 1 {
		t.Errorf("requests %v", app.Requests)
	}
	if q := app.Limits[CapacityResource]; q.Value() != 1 {
		t.Errorf("limits %v", app.Limits)
	}
	if r := pod.Spec.Containers[1].Resources; r.Requests != nil || r.Limits != nil {
		t.Errorf("second container changed: %+v", r)
	}
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func podRequest(t *testing.T, namespace string, pod *corev1.Pod) admission.Request {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: namespace, Object: runtime.RawExtension{Raw: raw},
	}}
}

func claimPod(claims ...string) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	for _, c := range claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c},
		}})
	}
	return pod
}

// TestPodMutatorHandle runs the webhook on fake clients: a claim the cache does not have yet is
// read from the API server, the pod's namespace comes from the request when the pod has none, and
// a failed read admits the pod unchanged with a warning.
func TestPodMutatorHandle(t *testing.T) {
	s := testScheme(t)
	sc := storageClass("lvms-ssd", "topolvm.io", map[string]string{"topolvm.io/device-class": "ssd"})
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"},
		Spec:       claimSpec("lvms-ssd", "2Gi"),
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	cache := fake.NewClientBuilder().WithScheme(s).WithObjects(sc).Build()
	live := fake.NewClientBuilder().WithScheme(s).WithObjects(sc, pvc).Build()
	failing := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("apiserver unavailable")
		},
	}).Build()
	dec := admission.NewDecoder(s)

	resp := NewPodCapacityMutator(cache, live, dec, "").Handle(t.Context(), podRequest(t, "app", claimPod("data")))
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("response %+v, want allowed with a patch", resp)
	}
	patch := ""
	for _, p := range resp.Patches {
		b, _ := json.Marshal(p)
		patch += string(b)
	}
	for _, want := range []string{`"capacity.topolvm.io/ssd":"2147483648"`, `"topolvm.io/capacity":"1"`} {
		if !strings.Contains(patch, want) {
			t.Errorf("patch %s lacks %s", patch, want)
		}
	}

	resp = NewPodCapacityMutator(failing, failing, dec, "").Handle(t.Context(), podRequest(t, "app", claimPod("data")))
	if !resp.Allowed || len(resp.Patches) != 0 || len(resp.Warnings) != 1 ||
		!strings.Contains(resp.Warnings[0], "apiserver unavailable") {
		t.Errorf("failed read: response %+v, want allowed unchanged with a warning", resp)
	}

	resp = NewPodCapacityMutator(cache, live, dec, "").Handle(t.Context(), admission.Request{
		AdmissionRequest: admissionv1.AdmissionRequest{Object: runtime.RawExtension{Raw: []byte("{")}},
	})
	if resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable pod: response %+v, want 400", resp)
	}
}
