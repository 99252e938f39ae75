package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

const (
	// helloGroup and helloKind name the data sources this populator fills claims from.
	helloGroup = "hello.example.com"
	helloKind  = "Hello"
	// annSelectedNode is the scheduler's choice of node for a WaitForFirstConsumer claim.
	annSelectedNode = "volume.kubernetes.io/selected-node"
	// annClaim ("namespace/name") and annClaimUID name the original claim on the prime claim and
	// the pod made for it, so that their events lead back to it.
	annClaim    = helloGroup + "/claim"
	annClaimUID = helloGroup + "/claim-uid"
	// annPopulatedFrom on a populated PV names its Hello ("namespace/name").
	annPopulatedFrom = helloGroup + "/populated-from"
	// volumeName is the prime claim's volume in the pod; mountPath and devicePath where it shows.
	volumeName = "target"
	mountPath  = "/mnt"
	devicePath = "/dev/block"
)

// helloGVR is the Hello custom resource (hello-populator-crd.yaml of the storage e2e suite).
var helloGVR = schema.GroupVersionResource{Group: helloGroup, Version: "v1alpha1", Resource: "hellos"}

// claimKey names an original claim: a claim outside the populator's namespace whose
// dataSourceRef is a Hello. The UID tells a claim from a later one of the same name and names
// what the populator makes for it.
type claimKey struct {
	namespace, name string
	uid             types.UID
}

func (k claimKey) String() string { return k.namespace + "/" + k.name }

// populator carries out the volume populator protocol for claims whose dataSourceRef is a Hello:
// it provisions a prime claim of the same class, size and node in its own namespace, writes the
// Hello's file onto it with a pod, hands the prime claim's PV over to the original claim (the PV
// controller then binds them) and deletes the pod and the prime claim.
type populator struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	// namespace holds the prime claims and the pods; image is the populate pods' image (ours).
	namespace, image string
}

// helloSpec is what a Hello asks for: a file of these contents on the claim's filesystem.
type helloSpec struct {
	fileName, fileContents string
}

// isHelloClaim tells whether c is a claim this populator fills: its data source a Hello of its own
// namespace (no cross-namespace data sources, which would need ReferenceGrants).
func isHelloClaim(c *corev1.PersistentVolumeClaim) bool {
	ref := c.Spec.DataSourceRef
	return ref != nil && ref.APIGroup != nil && *ref.APIGroup == helloGroup && ref.Kind == helloKind &&
		ref.Name != "" && (ref.Namespace == nil || *ref.Namespace == c.Namespace)
}

// primeName and podName are what the populator makes for the claim of this UID.
func primeName(uid types.UID) string { return "prime-" + string(uid) }
func podName(uid types.UID) string   { return "populate-" + string(uid) }

// sync takes the claim k one step further: what the populator made for it goes away when the
// claim is gone or bound; otherwise, once its Hello exists and its node is chosen, it makes the
// prime claim and the pod and, when the pod has succeeded, hands the PV over. Every step looks
// first at what exists, so that it may run any number of times, and after a restart.
func (p *populator) sync(ctx context.Context, k claimKey) error {
	if k.namespace == p.namespace {
		return nil // its own prime claims
	}
	pvc, err := p.kube.CoreV1().PersistentVolumeClaims(k.namespace).Get(ctx, k.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return p.cleanup(ctx, k)
	case err != nil:
		return fmt.Errorf("get claim %s: %w", k, err)
	case pvc.UID != k.uid || pvc.DeletionTimestamp != nil || pvc.Spec.VolumeName != "":
		return p.cleanup(ctx, k)
	case !isHelloClaim(pvc):
		return nil
	}
	hello, found, err := p.hello(ctx, pvc)
	if err != nil || !found {
		return err
	}
	node, ready, err := p.selectedNode(ctx, pvc)
	if err != nil || !ready {
		return err
	}
	prime, err := p.ensurePrime(ctx, pvc, node)
	if err != nil {
		return err
	}
	done, err := p.ensurePod(ctx, pvc, hello, node)
	if err != nil || !done {
		return err
	}
	return p.rebind(ctx, pvc, prime)
}

// hello reads the claim's Hello; found is false when it does not exist yet (its creation starts
// another sync).
func (p *populator) hello(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (helloSpec, bool, error) {
	name := pvc.Spec.DataSourceRef.Name
	u, err := p.dynamic.Resource(helloGVR).Namespace(pvc.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Info("Waiting for the Hello", "hello", klog.KRef(pvc.Namespace, name))
		return helloSpec{}, false, nil
	}
	if err != nil {
		return helloSpec{}, false, fmt.Errorf("get Hello %s/%s: %w", pvc.Namespace, name, err)
	}
	var s helloSpec
	var errs []error
	for _, f := range []struct {
		name string
		to   *string
	}{{"fileName", &s.fileName}, {"fileContents", &s.fileContents}} {
		v, ok, err := unstructured.NestedString(u.Object, "spec", f.name)
		if err == nil && (!ok || v == "") {
			err = errors.New("not set")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.%s of Hello %s/%s: %w", f.name, pvc.Namespace, name, err))
		}
		*f.to = v
	}
	return s, true, errors.Join(errs...)
}

// selectedNode is the node the claim's volume must be on: the scheduler's choice for a
// WaitForFirstConsumer class (ready is false until it has made one, which updates the claim),
// none for an Immediate one.
func (p *populator) selectedNode(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, bool, error) {
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return "", true, nil
	}
	name := *pvc.Spec.StorageClassName
	sc, err := p.kube.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", false, fmt.Errorf("get StorageClass %s of claim %s/%s: %w", name, pvc.Namespace, pvc.Name, err)
	}
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return "", true, nil
	}
	node := pvc.Annotations[annSelectedNode]
	return node, node != "", nil
}

// owner are the annotations that lead from what the populator makes back to the claim.
func owner(pvc *corev1.PersistentVolumeClaim) map[string]string {
	return map[string]string{annClaim: pvc.Namespace + "/" + pvc.Name, annClaimUID: string(pvc.UID)}
}

// ensurePrime returns the prime claim of pvc, made when missing: the same class, access modes,
// resources and volume mode in the populator's namespace, with the selected node copied so that
// the provisioner provisions it there.
func (p *populator) ensurePrime(
	ctx context.Context, pvc *corev1.PersistentVolumeClaim, node string,
) (*corev1.PersistentVolumeClaim, error) {
	claims := p.kube.CoreV1().PersistentVolumeClaims(p.namespace)
	prime, err := claims.Get(ctx, primeName(pvc.UID), metav1.GetOptions{})
	if err == nil {
		return prime, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get prime claim %s/%s: %w", p.namespace, primeName(pvc.UID), err)
	}
	prime = &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: primeName(pvc.UID), Namespace: p.namespace, Annotations: owner(pvc)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      pvc.Spec.AccessModes,
			Resources:        pvc.Spec.Resources,
			StorageClassName: pvc.Spec.StorageClassName,
			VolumeMode:       pvc.Spec.VolumeMode,
		},
	}
	if node != "" {
		prime.Annotations[annSelectedNode] = node
	}
	prime, err = claims.Create(ctx, prime, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create prime claim %s/%s: %w", p.namespace, primeName(pvc.UID), err)
	}
	klog.FromContext(ctx).Info("Created the prime claim", "prime", klog.KObj(prime), "node", node)
	return prime, nil
}

// ensurePod makes the pod that writes the Hello's file onto the prime claim, when missing, and
// tells whether it has succeeded. A failed pod is deleted, and its deletion starts another.
func (p *populator) ensurePod(
	ctx context.Context, pvc *corev1.PersistentVolumeClaim, hello helloSpec, node string,
) (bool, error) {
	pods := p.kube.CoreV1().Pods(p.namespace)
	pod, err := pods.Get(ctx, podName(pvc.UID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		pod, err = pods.Create(ctx, p.populatePod(pvc, hello, node), metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("create pod %s/%s: %w", p.namespace, podName(pvc.UID), err)
		}
		klog.FromContext(ctx).Info("Created the populate pod", "pod", klog.KObj(pod), "node", node)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get pod %s/%s: %w", p.namespace, podName(pvc.UID), err)
	}
	switch {
	case pod.DeletionTimestamp != nil:
		return false, nil
	case pod.Status.Phase == corev1.PodFailed:
		klog.FromContext(ctx).Info("The populate pod failed, deleting it to retry", "pod", klog.KObj(pod),
			"message", pod.Status.Message)
		if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete failed pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		return false, nil
	}
	return pod.Status.Phase == corev1.PodSucceeded, nil
}

// populatePod is the pod that runs this program in populate mode on the prime claim: the
// filesystem mounted at mountPath, or the block device at devicePath, on the selected node.
func (p *populator) populatePod(pvc *corev1.PersistentVolumeClaim, hello helloSpec, node string) *corev1.Pod {
	c := corev1.Container{Name: "populate", Image: p.image, ImagePullPolicy: corev1.PullIfNotPresent}
	file := hello.fileName
	if pvc.Spec.VolumeMode != nil && *pvc.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		file = devicePath
		c.VolumeDevices = []corev1.VolumeDevice{{Name: volumeName, DevicePath: devicePath}}
	} else {
		c.VolumeMounts = []corev1.VolumeMount{{Name: volumeName, MountPath: mountPath}}
	}
	c.Args = []string{
		"--mode=populate", "--mount-path=" + mountPath, "--file-name=" + file, "--file-contents=" + hello.fileContents,
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(pvc.UID), Namespace: p.namespace, Annotations: owner(pvc)},
		Spec: corev1.PodSpec{
			Containers:    []corev1.Container{c},
			RestartPolicy: corev1.RestartPolicyNever,
			// The scheduler chose this node for the claim's consumer; the prime claim's volume is
			// provisioned there, so the pod goes there without being scheduled, as upstream's does.
			NodeName: node,
			Volumes: []corev1.Volume{{Name: volumeName, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: primeName(pvc.UID)},
			}}},
		},
	}
}

// rebind points the prime claim's PV at the original claim; the PV controller then binds the
// claim to it (a PV whose claimRef names a claim is that claim's) and the prime claim is Lost.
func (p *populator) rebind(ctx context.Context, pvc, prime *corev1.PersistentVolumeClaim) error {
	if prime.Spec.VolumeName == "" {
		return fmt.Errorf("prime claim %s/%s has no volume, yet its pod succeeded", prime.Namespace, prime.Name)
	}
	pv, err := p.kube.CoreV1().PersistentVolumes().Get(ctx, prime.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get PV %s of prime claim %s/%s: %w", prime.Spec.VolumeName, prime.Namespace, prime.Name, err)
	}
	ref := pv.Spec.ClaimRef
	switch {
	case ref != nil && ref.UID == pvc.UID:
		return nil // handed over; the PV controller binds the claim
	case ref == nil || ref.UID != prime.UID:
		return fmt.Errorf("PV %s is not bound to prime claim %s/%s", pv.Name, prime.Namespace, prime.Name)
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{
			annPopulatedFrom: path.Join(pvc.Namespace, pvc.Spec.DataSourceRef.Name),
		}},
		"spec": map[string]any{"claimRef": corev1.ObjectReference{
			Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: pvc.Namespace, Name: pvc.Name,
			UID: pvc.UID, ResourceVersion: pvc.ResourceVersion,
		}},
	})
	if err != nil {
		return fmt.Errorf("PV %s patch: %w", pv.Name, err)
	}
	if _, err := p.kube.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, patch,
		metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("hand PV %s over to claim %s/%s: %w", pv.Name, pvc.Namespace, pvc.Name, err)
	}
	klog.FromContext(ctx).Info("Handed the PV over to the claim", "pv", klog.KObj(pv))
	return nil
}

// cleanup deletes the pod and the prime claim of k, once the claim is bound (its PV is no longer
// the prime claim's) or gone (then the prime claim's PV goes with it).
func (p *populator) cleanup(ctx context.Context, k claimKey) error {
	err := p.kube.CoreV1().Pods(p.namespace).Delete(ctx, podName(k.uid), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s of claim %s: %w", p.namespace, podName(k.uid), k, err)
	}
	if err == nil {
		klog.FromContext(ctx).Info("Deleted the populate pod", "pod", klog.KRef(p.namespace, podName(k.uid)))
	}
	err = p.kube.CoreV1().PersistentVolumeClaims(p.namespace).Delete(ctx, primeName(k.uid), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete prime claim %s/%s of claim %s: %w", p.namespace, primeName(k.uid), k, err)
	}
	if err == nil {
		klog.FromContext(ctx).Info("Deleted the prime claim", "prime", klog.KRef(p.namespace, primeName(k.uid)))
	}
	return nil
}
