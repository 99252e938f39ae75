package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

const testVolumeIDIndex = "status.volumeID"

// volumeSnapshot is a VolumeSnapshot of namespace app bound to content ("" for none yet).
func volumeSnapshot(namespace, name, content string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(volumeSnapshotGVK)
	u.SetNamespace(namespace)
	u.SetName(name)
	if content != "" {
		u.Object["status"] = map[string]any{"boundVolumeSnapshotContentName": content, "readyToUse": true}
	}
	return u
}

// snapshotContent is a VolumeSnapshotContent of csiDriver with snapshot handle.
func snapshotContent(name, csiDriver, handle string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec":   map[string]any{"driver": csiDriver},
		"status": map[string]any{"snapshotHandle": handle},
	}}
	u.SetGroupVersionKind(volumeSnapshotContentGVK)
	u.SetName(name)
	return u
}

func logicalVolume(name, node, volumeID string) *topolvmv1.LogicalVolume {
	return &topolvmv1.LogicalVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       topolvmv1.LogicalVolumeSpec{Name: name, NodeName: node},
		Status:     topolvmv1.LogicalVolumeStatus{VolumeID: volumeID},
	}
}

// boundClaim is claim app/name bound to PersistentVolume pv ("" for none).
func boundClaim(name, pv string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: pv},
	}
}

func csiVolume(name, csiDriver, handle string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
			CSI: &corev1.CSIPersistentVolumeSource{Driver: csiDriver, VolumeHandle: handle},
		}},
	}
}

// fromSource is an unbound 1 GiB claim of class sc with dataSource kind/name of group.
func fromSource(sc, group, kind, name string) podClaim {
	spec := claimSpec(sc, "1Gi")
	spec.DataSource = &corev1.TypedLocalObjectReference{Kind: kind, Name: name}
	if group != "" {
		spec.DataSource.APIGroup = ptr.To(group)
	}
	return podClaim{spec: spec}
}

func fromSnapshot(name string) podClaim {
	return fromSource("lvms", snapshotGroup, "VolumeSnapshot", name)
}

func fromClaim(name string) podClaim { return fromSource("lvms", "", "PersistentVolumeClaim", name) }

// withRef sets the claim's dataSourceRef to kind/name of group in namespace ("" for none).
func withRef(c podClaim, group, kind, name, namespace string) podClaim {
	c.spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: ptr.To(group), Kind: kind, Name: name}
	if namespace != "" {
		c.spec.DataSourceRef.Namespace = ptr.To(namespace)
	}
	return c
}

// sourceWorld is the cluster of TestSourceNodes: the typed objects (cache and API server) and
// the snapshot objects (API server only, as the webhook reads them).
func sourceWorld() (typed, snapshots []client.Object) {
	typed = []client.Object{
		logicalVolume("snap-a-lv", "node-a", "snap-a-id"),
		logicalVolume("snap-b-lv", "node-b", "snap-b-id"),
		logicalVolume("vol-c-lv", "node-c", "vol-c-id"),
		logicalVolume("vol-d-lv", "node-d", "vol-d-id"),
		logicalVolume("no-id-lv", "node-x", ""),
		boundClaim("src", "pv-c"), csiVolume("pv-c", driver.Name, "vol-c-id"),
		csiVolume("pv-d", driver.Name, "vol-d-id"),
		boundClaim("unbound-src", ""),
		boundClaim("nfs-src", "pv-nfs"), csiVolume("pv-nfs", "nfs.csi.k8s.io", "vol-c-id"),
		boundClaim("lost-src", "pv-lost"),
	}
	snapshots = []client.Object{
		volumeSnapshot("app", "snap", "content-a"), snapshotContent("content-a", driver.Name, "snap-a-id"),
		volumeSnapshot("app", "snap-b", "content-b"), snapshotContent("content-b", driver.Name, "snap-b-id"),
		volumeSnapshot("app", "pending", ""),
		volumeSnapshot("app", "dangling", "no-such-content"),
		volumeSnapshot("app", "orphan", "content-orphan"), snapshotContent("content-orphan", driver.Name, "gone-id"),
		volumeSnapshot("app", "foreign", "content-foreign"),
		snapshotContent("content-foreign", "other.csi.example.com", "snap-a-id"),
		volumeSnapshot("other", "snap", "content-a"),
	}
	return typed, snapshots
}

// TestSourceNodes resolves the nodes of claims' data sources on fake clients: the cache holds the
// typed objects, the API server those and the snapshots; the claim "live-src" (bound to pv-d) is
// on the API server only, as a claim created just before the pod is.
func TestSourceNodes(t *testing.T) {
	errDown := errors.New("apiserver unavailable")
	noSnapshotAPI := func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object,
		opts ...client.GetOption,
	) error {
		if obj.GetObjectKind().GroupVersionKind().Group == snapshotGroup {
			return &meta.NoKindMatchError{GroupKind: volumeSnapshotGVK.GroupKind(), SearchedVersions: []string{"v1"}}
		}
		return c.Get(ctx, key, obj, opts...)
	}
	snapDown := func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object,
		opts ...client.GetOption,
	) error {
		if key.Name == "snap" {
			return errDown
		}
		return c.Get(ctx, key, obj, opts...)
	}
	snapHangs := func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object,
		opts ...client.GetOption,
	) error {
		if key.Name == "snap" {
			<-ctx.Done()
			return ctx.Err()
		}
		return c.Get(ctx, key, obj, opts...)
	}
	tests := []struct {
		name    string
		claims  []podClaim
		index   string
		liveGet func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error
		timeout time.Duration // of the lookups, when not SourceLookupTimeout
		want    string
	}{
		{name: "a restore: the node of the snapshot's LogicalVolume", claims: []podClaim{fromSnapshot("snap")},
			want: "node-a"},
		{name: "a clone: the node of the source claim's volume", claims: []podClaim{fromClaim("src")},
			want: "node-c"},
		{name: "a source claim only the API server has", claims: []podClaim{fromClaim("live-src")}, want: "node-d"},
		{name: "dataSourceRef before dataSource", want: "node-b", claims: []podClaim{
			withRef(fromSnapshot("snap"), snapshotGroup, "VolumeSnapshot", "snap-b", "app"),
		}},
		{name: "several claims: distinct nodes, sorted", want: "node-a,node-b,node-c", claims: []podClaim{
			fromSnapshot("snap-b"), fromClaim("src"), fromSnapshot("snap"), fromSnapshot("snap"),
		}},
		{name: "without an index every LogicalVolume is listed", index: "-", claims: []podClaim{fromSnapshot("snap")},
			want: "node-a"},
		{name: "sources without a node add nothing", want: "", claims: []podClaim{
			fromSnapshot("pending"), fromSnapshot("dangling"), fromSnapshot("orphan"), fromSnapshot("foreign"),
			fromSnapshot("missing"), fromClaim("unbound-src"), fromClaim("nfs-src"), fromClaim("lost-src"),
			fromClaim("missing"),
		}},
		{name: "other kinds and groups, and other namespaces, are not followed", want: "", claims: []podClaim{
			fromSource("lvms", "example.com", "VolumeSnapshot", "snap"),
			fromSource("lvms", "", "VolumeSnapshot", "snap"),
			fromSource("lvms", "example.com", "Populator", "snap"),
			fromSource("lvms", "", "PersistentVolumeClaim", ""),
			withRef(fromSnapshot("snap"), snapshotGroup, "VolumeSnapshot", "snap", "other"),
		}},
		{name: "claims the capacity requests do not count", want: "", claims: []podClaim{
			{spec: fromSnapshot("snap").spec, bound: true},
			fromSource("nfs", snapshotGroup, "VolumeSnapshot", "snap"),
			fromSource(
				"missing",
				snapshotGroup,
				"VolumeSnapshot",
				"snap",
			),
			fromSource("-", "", "PersistentVolumeClaim", "src"),
		}},
		{name: "without the snapshot API restores add nothing, clones still do", liveGet: noSnapshotAPI,
			claims: []podClaim{fromSnapshot("snap"), fromClaim("src")}, want: "node-c"},
		{name: "a failed read drops only its source", liveGet: snapDown,
			claims: []podClaim{fromSnapshot("snap"), fromSnapshot("snap-b")}, want: "node-b"},
		{name: "a read that hangs ends at the timeout with the nodes found", liveGet: snapHangs,
			timeout: 100 * time.Millisecond, claims: []podClaim{fromSnapshot("snap-b"), fromSnapshot("snap")},
			want: "node-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sourceMutator(t, tt.index, tt.liveGet)
			if tt.timeout > 0 {
				m.sourceTimeout = tt.timeout
			}
			start := time.Now()
			got := driver.FormatSourceNodes(m.sourceNodes(t.Context(), "app", tt.claims, testClasses()))
			if got != tt.want {
				t.Errorf("source nodes %q, want %q", got, tt.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v, want the timeout to end it", d)
			}
		})
	}
}

func testClasses() map[string]*storagev1.StorageClass {
	return map[string]*storagev1.StorageClass{
		"lvms":    storageClass("lvms", driver.Name, nil),
		"nfs":     storageClass("nfs", "nfs.csi.k8s.io", nil),
		"missing": nil,
	}
}

// sourceMutator is a pod webhook on sourceWorld and extra objects; index "-" gives a cache without
// the volume ID index, liveGet (if not nil) intercepts the API server's reads.
func sourceMutator(
	t *testing.T, index string,
	liveGet func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error,
	extra ...client.Object,
) *PodCapacityMutator {
	t.Helper()
	s := sourceScheme(t)
	typed, snapshots := sourceWorld()
	typed = append(typed, extra...)
	cache := fake.NewClientBuilder().WithScheme(s).WithObjects(typed...)
	if index == "-" {
		index = ""
	} else {
		index = testVolumeIDIndex
		cache = cache.WithIndex(&topolvmv1.LogicalVolume{}, index, func(o client.Object) []string {
			return []string{o.(*topolvmv1.LogicalVolume).Status.VolumeID}
		})
	}
	live := fake.NewClientBuilder().WithScheme(s).WithObjects(typed...).WithObjects(snapshots...).
		WithObjects(boundClaim("live-src", "pv-d")).WithInterceptorFuncs(interceptor.Funcs{Get: liveGet}).Build()
	return NewPodCapacityMutator(cache.Build(), live, admission.NewDecoder(s), index)
}

func sourceScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := testScheme(t)
	if err := topolvmv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSetSourceNodes(t *testing.T) {
	pod := &corev1.Pod{}
	setSourceNodes(pod, nil)
	if pod.Annotations != nil {
		t.Errorf("no nodes: annotations %v", pod.Annotations)
	}
	setSourceNodes(pod, []string{"b", "a", "b"})
	if got := pod.Annotations[driver.AnnotationSourceNodes]; got != "a,b" {
		t.Errorf("annotation %q, want a,b", got)
	}
}

// TestPodMutatorHandleSourceNodes: the pod of a restore gets the source's node next to its
// capacity requests, and a failed lookup of the source leaves the capacity requests alone.
func TestPodMutatorHandleSourceNodes(t *testing.T) {
	restored := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "restored"},
		Spec:       fromSnapshot("snap").spec,
	}
	extra := []client.Object{storageClass("lvms", driver.Name, nil), restored}
	down := func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return errors.New("apiserver unavailable")
	}
	tests := []struct {
		name    string
		liveGet func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error
		want    string
	}{
		{name: "the snapshot's node", want: `"lvms.topolvm.io/source-nodes":"node-a"`},
		{name: "the API server fails: capacity requests only", liveGet: down},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sourceMutator(t, "", tt.liveGet, extra...)
			resp := m.Handle(t.Context(), podRequest(t, "app", claimPod("restored")))
			if !resp.Allowed || len(resp.Warnings) != 0 {
				t.Fatalf("response %+v, want allowed without warnings", resp)
			}
			patch := ""
			for _, p := range resp.Patches {
				b, _ := json.Marshal(p)
				patch += string(b)
			}
			if !strings.Contains(patch, `"capacity.topolvm.io/00default":"1073741824"`) {
				t.Errorf("patch %s lacks the capacity request", patch)
			}
			if has := strings.Contains(patch, driver.AnnotationSourceNodes); has != (tt.want != "") ||
				!strings.Contains(patch, tt.want) {
				t.Errorf("patch %s, want source nodes %s", patch, tt.want)
			}
		})
	}
}
