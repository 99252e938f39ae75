package lvmcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// Optional APIs: written only when the API server serves them.
var (
	// SnapshotClassGVK is the VolumeSnapshotClass kind of the external-snapshotter CRDs.
	SnapshotClassGVK = schema.GroupVersionKind{
		Group:   "snapshot.storage.k8s.io",
		Version: "v1",
		Kind:    "VolumeSnapshotClass",
	}
	// SCCGVK is OpenShift's SecurityContextConstraints kind.
	SCCGVK = schema.GroupVersionKind{Group: "security.openshift.io", Version: "v1", Kind: "SecurityContextConstraints"}
)

// SCCName is the name of the SecurityContextConstraints of the node agent.
const SCCName = "lvms-node"

func newUnstructured(gvk schema.GroupVersionKind, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

// snapshotClassFor is the VolumeSnapshotClass of a device class. Every class has one: a thin class
// takes thin snapshots, a thick class copy-on-write snapshots whose restores are full copies
// (docs/csi.md).
func snapshotClassFor(c *lvmv1alpha1.LVMCluster, dc *lvmv1alpha1.DeviceClass) *unstructured.Unstructured {
	u := newUnstructured(SnapshotClassGVK, StorageClassName(dc.Name),
		withLabels(ownerLabels(c), map[string]string{LabelDeviceClass: dc.Name}))
	u.Object["driver"] = driver.Name
	u.Object["deletionPolicy"] = "Delete"
	u.Object["parameters"] = map[string]any{driver.ParamDeviceClass: dc.Name}
	return u
}

func applySnapshotClasses(ctx context.Context, s *scope) error {
	ok, err := s.served(SnapshotClassGVK)
	if err != nil || !ok {
		return err
	}
	wanted := map[string]bool{}
	for i := range s.cluster.Spec.Storage.DeviceClasses {
		u := snapshotClassFor(s.cluster, &s.cluster.Spec.Storage.DeviceClasses[i])
		wanted[u.GetName()] = true
		if err := applyOperand(ctx, s.client, client.ApplyConfigurationFromUnstructured(u)); err != nil {
			return fmt.Errorf("apply VolumeSnapshotClass %s: %w", u.GetName(), err)
		}
	}
	return deleteStale(ctx, s, snapshotClassList(), wanted)
}

func snapshotClassList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(SnapshotClassGVK.GroupVersion().WithKind(SnapshotClassGVK.Kind + "List"))
	return l
}

func removeSnapshotClasses(ctx context.Context, s *scope) (bool, error) {
	return removeLabelled(snapshotClassList())(ctx, s)
}

// sccFor lets the node agent's service account run privileged with host PID and host paths.
func sccFor(c *lvmv1alpha1.LVMCluster, namespace string) *unstructured.Unstructured {
	u := newUnstructured(SCCGVK, SCCName, ownerLabels(c))
	u.Object["allowPrivilegedContainer"] = true
	u.Object["allowHostDirVolumePlugin"] = true
	u.Object["allowHostPID"] = true
	u.Object["allowHostIPC"] = false
	u.Object["allowHostNetwork"] = false
	u.Object["allowHostPorts"] = false
	u.Object["readOnlyRootFilesystem"] = false
	u.Object["requiredDropCapabilities"] = []any{}
	u.Object["runAsUser"] = map[string]any{"type": "RunAsAny"}
	u.Object["seLinuxContext"] = map[string]any{"type": "RunAsAny"}
	u.Object["fsGroup"] = map[string]any{"type": "RunAsAny"}
	u.Object["supplementalGroups"] = map[string]any{"type": "RunAsAny"}
	u.Object["volumes"] = []any{"configMap", "emptyDir", "hostPath", "secret", "projected"}
	u.Object["users"] = []any{"system:serviceaccount:" + namespace + ":" + NodeServiceAccountName}
	return u
}

func applySCC(ctx context.Context, s *scope) error {
	ok, err := s.served(SCCGVK)
	if err != nil || !ok {
		return err
	}
	u := sccFor(s.cluster, s.opts.Namespace)
	if err := applyOperand(ctx, s.client, client.ApplyConfigurationFromUnstructured(u)); err != nil {
		return fmt.Errorf("apply SecurityContextConstraints %s: %w", SCCName, err)
	}
	return nil
}

func removeSCC(ctx context.Context, s *scope) (bool, error) {
	ok, err := s.served(SCCGVK)
	if err != nil || !ok {
		return !ok, err
	}
	return deleteObject(ctx, s.client, newUnstructured(SCCGVK, SCCName, nil))
}

// absentRecheck is how long a kind the API server did not serve is taken as absent before
// discovery is asked again: installing the snapshot CRDs is noticed by the first reconcile after it.
const absentRecheck = time.Minute

// absentKinds remembers when each optional kind was last found absent. The zero of a nil
// *absentKinds remembers nothing. It is safe for concurrent use.
type absentKinds struct {
	mu    sync.Mutex
	now   func() time.Time
	since map[schema.GroupVersionKind]time.Time
}

func newAbsentKinds(now func() time.Time) *absentKinds {
	return &absentKinds{now: now, since: map[schema.GroupVersionKind]time.Time{}}
}

// recent reports whether gvk was found absent less than absentRecheck ago.
func (a *absentKinds) recent(gvk schema.GroupVersionKind) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.since[gvk]
	return ok && a.now().Sub(at) < absentRecheck
}

func (a *absentKinds) record(gvk schema.GroupVersionKind) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.since[gvk] = a.now()
}
