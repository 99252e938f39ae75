package webhook

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// What the pod webhook reads to find the nodes of its claims' data sources. The snapshot objects
// are read as unstructured: the product does not depend on external-snapshotter's module.
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshots;volumesnapshotcontents,verbs=get
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=topolvm.io,resources=logicalvolumes,verbs=get;list;watch

// snapshotGroup is the API group of VolumeSnapshots and VolumeSnapshotContents.
const snapshotGroup = "snapshot.storage.k8s.io"

// SourceLookupTimeout bounds the data-source lookups of one pod, well within the webhook's
// timeoutSeconds (5): past it the pod is admitted with the nodes found so far, rather than the API
// server giving up on the webhook and admitting the pod without its capacity requests too.
const SourceLookupTimeout = 2 * time.Second

var (
	volumeSnapshotGVK        = schema.GroupVersionKind{Group: snapshotGroup, Version: "v1", Kind: "VolumeSnapshot"}
	volumeSnapshotContentGVK = schema.GroupVersionKind{
		Group:   snapshotGroup,
		Version: "v1",
		Kind:    "VolumeSnapshotContent",
	}
)

// dataSource is a claim's data source the scheduler can place by: a VolumeSnapshot or a
// PersistentVolumeClaim (kind) in the claim's namespace.
type dataSource struct{ kind, name string }

// claimSource returns the data source of a claim of namespace: spec.dataSourceRef, else
// spec.dataSource (the API server mirrors one into the other), when it names a VolumeSnapshot or a
// PersistentVolumeClaim. A reference to another namespace is not followed: the claim's pod would
// learn where another namespace's data lives, and such a claim needs a ReferenceGrant to
// provision at all.
func claimSource(spec corev1.PersistentVolumeClaimSpec, namespace string) (dataSource, bool) {
	var group *string
	var src dataSource
	switch r, d := spec.DataSourceRef, spec.DataSource; {
	case r != nil:
		if ns := ptr.Deref(r.Namespace, ""); ns != "" && ns != namespace {
			return dataSource{}, false
		}
		group, src = r.APIGroup, dataSource{kind: r.Kind, name: r.Name}
	case d != nil:
		group, src = d.APIGroup, dataSource{kind: d.Kind, name: d.Name}
	default:
		return dataSource{}, false
	}
	switch g := ptr.Deref(group, ""); {
	case src.name == "":
		return dataSource{}, false
	case src.kind == volumeSnapshotGVK.Kind && g == snapshotGroup, src.kind == "PersistentVolumeClaim" && g == "":
		return src, true
	}
	return dataSource{}, false
}

// sourceNodes returns the nodes holding the data sources of the claims (of namespace) that are not
// bound and use a topolvm.io StorageClass (classes by name), in claim order, possibly repeated. A
// source whose node cannot be found (no snapshot CRDs, a snapshot not ready yet, a claim not bound,
// a volume of another driver, no LogicalVolume) adds nothing, and so does one whose lookup fails
// or does not end within m.sourceTimeout: the node preference is a hint, never a reason to change
// the pod's admission.
func (m *PodCapacityMutator) sourceNodes(
	ctx context.Context, namespace string, claims []podClaim, classes map[string]*storagev1.StorageClass,
) []string {
	ctx, cancel := context.WithTimeout(ctx, m.sourceTimeout)
	defer cancel()
	var nodes []string
	for _, c := range claims {
		sc := classes[ptr.Deref(c.spec.StorageClassName, "")]
		if c.bound || sc == nil || sc.Provisioner != driver.Name {
			continue
		}
		src, ok := claimSource(c.spec, namespace)
		if !ok {
			continue
		}
		node, err := m.sourceNode(ctx, namespace, src)
		if err != nil {
			log := ctrl.LoggerFrom(ctx)
			log.Error(err, "Finding the node of a claim's data source failed; the scheduler does not prefer it",
				"namespace", namespace, "sourceKind", src.kind, "source", src.name)
			continue
		}
		if node != "" {
			nodes = append(nodes, node)
		}
	}
	return nodes
}

// sourceNode returns the node of src's volume, "" when there is none to find.
func (m *PodCapacityMutator) sourceNode(ctx context.Context, namespace string, src dataSource) (string, error) {
	key := types.NamespacedName{Namespace: namespace, Name: src.name}
	var id string
	var err error
	if src.kind == volumeSnapshotGVK.Kind {
		id, err = m.snapshotHandle(ctx, key)
	} else {
		id, err = m.claimVolumeHandle(ctx, key)
	}
	if err != nil || id == "" {
		return "", err
	}
	return m.volumeNode(ctx, id)
}

// snapshotHandle returns the CSI snapshot ID of VolumeSnapshot key: its bound
// VolumeSnapshotContent's status.snapshotHandle, when the content is topolvm.io's. "" when the
// snapshot, its content or the handle does not exist (yet), or the snapshot API is not installed.
//
// Both are read from the API server: the manager's client does not cache unstructured objects
// (reading them through it reaches the API server as well), and a cache of them would need list
// and watch and the CRDs to exist when the operator starts.
func (m *PodCapacityMutator) snapshotHandle(ctx context.Context, key types.NamespacedName) (string, error) {
	vs, err := m.getUnstructured(ctx, volumeSnapshotGVK, key)
	if err != nil || vs == nil {
		return "", err
	}
	content, _, err := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
	if err != nil || content == "" {
		return "", nil // not bound yet, or a status this reader does not understand
	}
	vsc, err := m.getUnstructured(ctx, volumeSnapshotContentGVK, types.NamespacedName{Name: content})
	if err != nil || vsc == nil {
		return "", err
	}
	if d, _, _ := unstructured.NestedString(vsc.Object, "spec", "driver"); d != driver.Name {
		return "", nil
	}
	handle, _, _ := unstructured.NestedString(vsc.Object, "status", "snapshotHandle")
	return handle, nil
}

// getUnstructured reads the object gvk, key from the API server; nil when it or its kind does not
// exist.
func (m *PodCapacityMutator) getUnstructured(
	ctx context.Context, gvk schema.GroupVersionKind, key types.NamespacedName,
) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := m.live.Get(ctx, key, u)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get %s %s: %w", gvk.Kind, key, err)
	}
	return u, nil
}

// claimVolumeHandle returns the CSI volume ID of claim key's PersistentVolume, when the claim is
// bound to a topolvm.io volume; "" otherwise. Read like the pod's claims: cache, then API server.
func (m *PodCapacityMutator) claimVolumeHandle(ctx context.Context, key types.NamespacedName) (string, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	found, err := m.get(ctx, key, pvc)
	if err != nil {
		return "", fmt.Errorf("get PersistentVolumeClaim %s: %w", key, err)
	}
	if !found || pvc.Spec.VolumeName == "" {
		return "", nil
	}
	pv := &corev1.PersistentVolume{}
	found, err = m.get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv)
	if err != nil {
		return "", fmt.Errorf("get PersistentVolume %s: %w", pvc.Spec.VolumeName, err)
	}
	if !found || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != driver.Name {
		return "", nil
	}
	return pv.Spec.CSI.VolumeHandle, nil
}

// volumeNode returns the node of the LogicalVolume whose status.volumeID is id, "" when none is.
// It reads the cache only, through the index volumeIDIndex when the cache has one (else it lists
// every LogicalVolume there): a data source's LogicalVolume has its ID long before a claim can be
// made from it (a snapshot is ready, a claim bound, only after), so a miss means there is none,
// and listing every LogicalVolume from the API server for it would cost more than the hint.
func (m *PodCapacityMutator) volumeNode(ctx context.Context, id string) (string, error) {
	var opts []client.ListOption
	if m.volumeIDIndex != "" {
		opts = append(opts, client.MatchingFields{m.volumeIDIndex: id})
	}
	var lvs topolvmv1.LogicalVolumeList
	if err := m.cache.List(ctx, &lvs, opts...); err != nil {
		return "", fmt.Errorf("list LogicalVolumes with volume ID %s: %w", id, err)
	}
	for i := range lvs.Items {
		if lvs.Items[i].Status.VolumeID == id {
			return lvs.Items[i].Spec.NodeName, nil
		}
	}
	return "", nil
}

// setSourceNodes writes nodes on the pod as driver.AnnotationSourceNodes (distinct, sorted); none
// writes nothing.
func setSourceNodes(pod *corev1.Pod, nodes []string) {
	v := driver.FormatSourceNodes(nodes)
	if v == "" {
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[driver.AnnotationSourceNodes] = v
}
