package kubelet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
)

// Volume context keys kubelet adds for drivers with podInfoOnMount.
const (
	ctxPodName        = "csi.storage.k8s.io/pod.name"
	ctxPodNamespace   = "csi.storage.k8s.io/pod.namespace"
	ctxPodUID         = "csi.storage.k8s.io/pod.uid"
	ctxServiceAccount = "csi.storage.k8s.io/serviceAccount.name"
	ctxEphemeral      = "csi.storage.k8s.io/ephemeral"
)

// errNotReady marks a volume whose claim or PV is not bound yet; setup is retried.
var errNotReady = errors.New("volume not ready")

// podVolume is one volume of a pod as it is made available on the node.
type podVolume struct {
	// Name is the pod's volume name.
	Name string
	// Claim is the PVC's namespace/name; empty for an emptyDir.
	Claim string
	// PV is the PersistentVolume name; Handle its CSI volume handle.
	PV, Handle string
	Block      bool
	ReadOnly   bool
	// Path is the host path the container sees: the publish target (a directory, or a file for block)
	// or the emptyDir's directory.
	Path string
	// Staging is the staging path when the driver stages, else empty.
	Staging    string
	Capability *csi.VolumeCapability
}

// csiVolume reports whether v was published through CSI.
func (v podVolume) csiVolume() bool { return v.Handle != "" }

// volumeManager publishes and unpublishes the CSI volumes of pods and remembers what it published.
type volumeManager struct {
	client  kubernetes.Interface
	csi     csi.NodeClient
	rootDir string

	mu        sync.Mutex
	published map[types.UID][]podVolume
}

// podDir is kubelet's directory of a pod.
func (m *volumeManager) podDir(uid types.UID) string {
	return filepath.Join(m.rootDir, "pods", string(uid))
}

// claimName is the PVC behind a pod volume (generic ephemeral volumes: <pod>-<volume>), or "".
func claimName(pod *corev1.Pod, v corev1.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		return pod.Name + "-" + v.Name
	}
	return ""
}

// Setup makes every PVC, generic ephemeral and emptyDir volume of pod available on the node. Other
// volume types (projected service account tokens, configMaps, secrets) are skipped. It wraps
// errNotReady while a claim is not bound yet.
func (m *volumeManager) Setup(ctx context.Context, pod *corev1.Pod) ([]podVolume, error) {
	var out []podVolume
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil {
			dir := filepath.Join(m.podDir(pod.UID), "volumes", "kubernetes.io~empty-dir", v.Name)
			if err := os.MkdirAll(dir, 0o750); err != nil {
				return nil, fmt.Errorf("emptyDir %s: %w", v.Name, err)
			}
			out = append(out, podVolume{Name: v.Name, Path: dir})
			continue
		}
		claim := claimName(pod, v)
		if claim == "" {
			continue
		}
		pv, err := m.publish(ctx, pod, v, claim)
		if err != nil {
			return nil, fmt.Errorf("volume %s (claim %s): %w", v.Name, claim, err)
		}
		out = append(out, pv)
	}
	return out, nil
}

// publish resolves claim to its CSI PV, stages it when the driver stages and publishes it for pod.
func (m *volumeManager) publish(ctx context.Context, pod *corev1.Pod, v corev1.Volume, claim string) (podVolume, error) {
	pvc, err := m.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return podVolume{}, fmt.Errorf("get claim: %w", err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return podVolume{}, fmt.Errorf("claim is %s: %w", pvc.Status.Phase, errNotReady)
	}
	pv, err := m.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return podVolume{}, fmt.Errorf("get PV %s: %w", pvc.Spec.VolumeName, err)
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != lvmcsi.DriverName {
		return podVolume{}, fmt.Errorf("PV %s is not a CSI volume of driver %s", pv.Name, lvmcsi.DriverName)
	}
	vol := podVolume{
		Name: v.Name, Claim: pod.Namespace + "/" + claim, PV: pv.Name, Handle: pv.Spec.CSI.VolumeHandle,
		ReadOnly:   pv.Spec.CSI.ReadOnly || (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly),
		Block:      pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock,
		Capability: capability(pv),
	}
	if vol.Block {
		vol.Path = filepath.Join(m.podDir(pod.UID), "volumeDevices", "kubernetes.io~csi", pv.Name)
	} else {
		vol.Path = filepath.Join(m.podDir(pod.UID), "volumes", "kubernetes.io~csi", pv.Name, "mount")
	}
	if err := os.MkdirAll(filepath.Dir(vol.Path), 0o750); err != nil {
		return podVolume{}, fmt.Errorf("create target parent: %w", err)
	}
	stage, err := m.stages(ctx)
	if err != nil {
		return podVolume{}, err
	}
	if stage {
		vol.Staging = m.stagingPath(vol.Handle)
		if err := m.stage(ctx, pv, vol); err != nil {
			return podVolume{}, err
		}
	}
	if _, err := m.csi.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId: vol.Handle, StagingTargetPath: vol.Staging, TargetPath: vol.Path,
		VolumeCapability: vol.Capability, Readonly: vol.ReadOnly, VolumeContext: volumeContext(pv, pod),
	}); err != nil {
		return podVolume{}, fmt.Errorf("NodePublishVolume %s: %w", vol.Handle, err)
	}
	m.record(pod.UID, vol)
	return vol, nil
}

// stage calls NodeStageVolume for vol.
func (m *volumeManager) stage(ctx context.Context, pv *corev1.PersistentVolume, vol podVolume) error {
	if err := os.MkdirAll(vol.Staging, 0o750); err != nil {
		return fmt.Errorf("create staging path: %w", err)
	}
	if _, err := m.csi.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
		VolumeId: vol.Handle, StagingTargetPath: vol.Staging, VolumeCapability: vol.Capability,
		VolumeContext: pv.Spec.CSI.VolumeAttributes,
	}); err != nil {
		return fmt.Errorf("NodeStageVolume %s: %w", vol.Handle, err)
	}
	return nil
}

// stagingPath is kubelet's global mount path of a volume.
func (m *volumeManager) stagingPath(handle string) string {
	sum := sha256.Sum256([]byte(handle))
	return filepath.Join(m.rootDir, "plugins", "kubernetes.io", "csi", lvmcsi.DriverName,
		hex.EncodeToString(sum[:]), "globalmount")
}

// stages reports whether the node service advertises STAGE_UNSTAGE_VOLUME.
func (m *volumeManager) stages(ctx context.Context) (bool, error) {
	resp, err := m.csi.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		return false, fmt.Errorf("NodeGetCapabilities: %w", err)
	}
	for _, c := range resp.GetCapabilities() {
		if c.GetRpc().GetType() == csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME {
			return true, nil
		}
	}
	return false, nil
}

// capability derives the CSI volume capability from the PV.
func capability(pv *corev1.PersistentVolume) *csi.VolumeCapability {
	mode := csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	for _, am := range pv.Spec.AccessModes {
		if am == corev1.ReadWriteOncePod {
			mode = csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		}
	}
	c := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode}}
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		c.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
		return c
	}
	c.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
		FsType: pv.Spec.CSI.FSType, MountFlags: pv.Spec.MountOptions}}
	return c
}

// volumeContext is the PV's volume attributes plus the pod information (podInfoOnMount).
func volumeContext(pv *corev1.PersistentVolume, pod *corev1.Pod) map[string]string {
	out := map[string]string{
		ctxPodName: pod.Name, ctxPodNamespace: pod.Namespace, ctxPodUID: string(pod.UID),
		ctxServiceAccount: pod.Spec.ServiceAccountName, ctxEphemeral: "false",
	}
	for k, v := range pv.Spec.CSI.VolumeAttributes {
		out[k] = v
	}
	return out
}

// record remembers a published volume of a pod (once per volume name).
func (m *volumeManager) record(uid types.UID, vol podVolume) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.published[uid] {
		if v.Name == vol.Name {
			return
		}
	}
	m.published[uid] = append(m.published[uid], vol)
}

// Teardown unpublishes (and unstages) every volume published for the pod and removes its directory.
// Volumes that fail stay recorded, so a later Teardown retries them.
func (m *volumeManager) Teardown(ctx context.Context, uid types.UID) error {
	m.mu.Lock()
	vols := m.published[uid]
	m.mu.Unlock()
	var errs []error
	var left []podVolume
	for _, v := range vols {
		if err := m.unpublish(ctx, uid, v); err != nil {
			errs = append(errs, err)
			left = append(left, v)
		}
	}
	m.mu.Lock()
	if len(left) == 0 {
		delete(m.published, uid)
	} else {
		m.published[uid] = left
	}
	m.mu.Unlock()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := os.RemoveAll(m.podDir(uid)); err != nil {
		return fmt.Errorf("remove pod directory: %w", err)
	}
	return nil
}

// unpublish calls NodeUnpublishVolume for v and, when v was staged and no other pod uses the volume,
// NodeUnstageVolume.
func (m *volumeManager) unpublish(ctx context.Context, uid types.UID, v podVolume) error {
	if _, err := m.csi.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{
		VolumeId: v.Handle, TargetPath: v.Path}); err != nil {
		return fmt.Errorf("NodeUnpublishVolume %s: %w", v.Handle, err)
	}
	if err := os.RemoveAll(v.Path); err != nil {
		return fmt.Errorf("remove target %s: %w", v.Path, err)
	}
	if v.Staging == "" || m.usedElsewhere(uid, v.Handle) {
		return nil
	}
	if _, err := m.csi.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{
		VolumeId: v.Handle, StagingTargetPath: v.Staging}); err != nil {
		return fmt.Errorf("NodeUnstageVolume %s: %w", v.Handle, err)
	}
	return nil
}

// usedElsewhere reports whether a pod other than uid has the volume published.
func (m *volumeManager) usedElsewhere(uid types.UID, handle string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for other, vols := range m.published {
		for _, v := range vols {
			if other != uid && v.Handle == handle {
				return true
			}
		}
	}
	return false
}

// ForClaim returns one published volume of the claim (namespace/name), if any pod has it.
func (m *volumeManager) ForClaim(claim string) (podVolume, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, vols := range m.published {
		for _, v := range vols {
			if v.Claim == claim && v.csiVolume() {
				return v, true
			}
		}
	}
	return podVolume{}, false
}
