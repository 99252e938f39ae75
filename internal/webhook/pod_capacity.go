package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

const (
	// PodMutatorPath is where the pod webhook is served: TopoLVM's path, so that a TopoLVM
	// MutatingWebhookConfiguration pointed at the operator works.
	PodMutatorPath = "/pod/mutate"
	// CapacityResource is the extended resource the pod webhook requests (1) on a pod's first
	// container; kube-scheduler calls the extender only for pods requesting it (managedResources).
	CapacityResource corev1.ResourceName = "topolvm.io/capacity"
)

// PodCapacityMutator is TopoLVM's pod webhook: on a pod whose claims use a topolvm.io StorageClass
// and are not bound yet, it sets the annotations capacity.topolvm.io/<device class> (the bytes the
// pod's claims of that class ask for) and the resource CapacityResource, for the scheduler
// extender (internal/scheduler). A pod with a bound topolvm.io claim is left alone: its node is
// decided by that volume. Ours, not TopoLVM's: when such claims restore a VolumeSnapshot or clone
// a claim, it also names the nodes holding those sources in driver.AnnotationSourceNodes, which
// the extender prefers (source_nodes.go).
type PodCapacityMutator struct {
	// cache is read first (the manager's cache); live, the API server, when the cache does not
	// have the object yet (a claim created just before its pod).
	cache, live client.Reader
	decoder     admission.Decoder
	// volumeIDIndex is the name of cache's field index of LogicalVolumes by status.volumeID; ""
	// when cache has none (LogicalVolumes are then listed and filtered).
	volumeIDIndex string
	// sourceTimeout bounds the data-source lookups of one pod (SourceLookupTimeout).
	sourceTimeout time.Duration
}

// NewPodCapacityMutator returns the pod webhook reading through cache, then live; volumeIDIndex
// names cache's index of LogicalVolumes by status.volumeID ("" for none).
func NewPodCapacityMutator(
	cache, live client.Reader, decoder admission.Decoder, volumeIDIndex string,
) *PodCapacityMutator {
	return &PodCapacityMutator{
		cache: cache, live: live, decoder: decoder, volumeIDIndex: volumeIDIndex, sourceTimeout: SourceLookupTimeout,
	}
}

// SetupPodMutator registers the pod webhook on the manager's webhook server at PodMutatorPath.
// volumeIDIndex names the manager cache's index of LogicalVolumes by status.volumeID, "" when it
// has none.
func SetupPodMutator(mgr ctrl.Manager, volumeIDIndex string) {
	m := NewPodCapacityMutator(mgr.GetClient(), mgr.GetAPIReader(), admission.NewDecoder(mgr.GetScheme()),
		volumeIDIndex)
	mgr.GetWebhookServer().Register(PodMutatorPath, &webhook.Admission{Handler: m})
}

// Handle patches the pod with its capacity requests and the nodes of its claims' data sources.
// When the claims or StorageClasses cannot be read it lets the pod in unchanged, with a warning:
// the scheduler then places it by CSIStorageCapacity alone (TopoLVM refuses the pod instead). The
// data sources' nodes are a hint: what cannot be found of them is left out.
func (m *PodCapacityMutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := m.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if len(pod.Spec.Volumes) == 0 || len(pod.Spec.Containers) == 0 {
		return admission.Allowed("no volumes")
	}
	// A pod made from a template may come without a namespace; its claims are in the request's.
	namespace := pod.Namespace
	if namespace == "" {
		namespace = req.Namespace
	}
	claims, classes, err := m.readClaims(ctx, namespace, pod.Spec.Volumes)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading the pod's claims failed; admitting it without capacity requests",
			"namespace", namespace, "pod", pod.Name, "generateName", pod.GenerateName)
		return admission.Allowed("").WithWarnings(
			"lvms: the pod gets no capacity.topolvm.io annotations (" + err.Error() + "): " +
				"the scheduler extender does not see it")
	}
	requests := capacityRequests(claims, classes)
	if len(requests) == 0 {
		return admission.Allowed("no unbound topolvm.io claims")
	}
	setCapacityRequests(pod, requests)
	setSourceNodes(pod, m.sourceNodes(ctx, namespace, claims, classes))
	patched, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encode the pod: %w", err))
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, patched)
}

// readClaims reads the claims of volumes and their StorageClasses (by name; nil for a missing
// class).
func (m *PodCapacityMutator) readClaims(
	ctx context.Context, namespace string, volumes []corev1.Volume,
) ([]podClaim, map[string]*storagev1.StorageClass, error) {
	var claims []podClaim
	for _, v := range volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			pvc := &corev1.PersistentVolumeClaim{}
			key := types.NamespacedName{Namespace: namespace, Name: v.PersistentVolumeClaim.ClaimName}
			found, err := m.get(ctx, key, pvc)
			if err != nil {
				return nil, nil, fmt.Errorf("get PersistentVolumeClaim %s: %w", key, err)
			}
			if found { // a pod may be created before its claim; the extender then does not see it
				claims = append(claims, podClaim{spec: pvc.Spec, bound: claimBound(pvc)})
			}
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			claims = append(claims, podClaim{spec: v.Ephemeral.VolumeClaimTemplate.Spec})
		}
	}
	classes := map[string]*storagev1.StorageClass{}
	for _, c := range claims {
		name := ptr.Deref(c.spec.StorageClassName, "")
		if _, seen := classes[name]; seen || name == "" {
			continue
		}
		sc := &storagev1.StorageClass{}
		found, err := m.get(ctx, types.NamespacedName{Name: name}, sc)
		if err != nil {
			return nil, nil, fmt.Errorf("get StorageClass %s: %w", name, err)
		}
		if !found {
			sc = nil
		}
		classes[name] = sc
	}
	return claims, classes, nil
}

// get reads key from the cache, else from the API server; found is false when neither has it.
func (m *PodCapacityMutator) get(ctx context.Context, key types.NamespacedName, obj client.Object) (bool, error) {
	err := m.cache.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = m.live.Get(ctx, key, obj)
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err // the caller names the object
	}
	return true, nil
}

// podClaim is a claim a pod's volume uses: an existing PersistentVolumeClaim or the template of a
// generic ephemeral volume (whose claim is made after the pod).
type podClaim struct {
	spec  corev1.PersistentVolumeClaimSpec
	bound bool
}

// claimBound is true once the claim is no longer Pending (a new claim has phase Pending).
func claimBound(pvc *corev1.PersistentVolumeClaim) bool {
	return pvc.Status.Phase != "" && pvc.Status.Phase != corev1.ClaimPending
}

// capacityRequests returns the bytes the claims of topolvm.io StorageClasses (classes by name; nil
// for a missing class) ask for, summed per device-class key: the StorageClass parameter
// topolvm.io/device-class, "00default" when it is empty or unset. A claim without a storage request
// counts as 1 GiB, the size the driver gives it. When one of these claims is bound the result is
// empty: the bound volume decides the node.
func capacityRequests(claims []podClaim, classes map[string]*storagev1.StorageClass) map[string]int64 {
	requests := map[string]int64{}
	for _, c := range claims {
		sc := classes[ptr.Deref(c.spec.StorageClassName, "")]
		if sc == nil || sc.Provisioner != driver.Name {
			continue
		}
		if c.bound {
			return nil
		}
		size := csi.DefaultSize
		if q, ok := c.spec.Resources.Requests[corev1.ResourceStorage]; ok && q.Value() > 0 {
			size = q.Value()
		}
		dc := driver.ClassKey(sc.Parameters[driver.ParamDeviceClass])
		requests[dc] = addSaturating(requests[dc], size)
	}
	return requests
}

func addSaturating(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// setCapacityRequests writes the requests on the pod as the extender reads them: one annotation
// capacity.topolvm.io/<key> per device class, in bytes, and a request and limit of 1
// CapacityResource on the first container.
func setCapacityRequests(pod *corev1.Pod, requests map[string]int64) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	for dc, n := range requests {
		pod.Annotations[driver.CapacityAnnotation(dc)] = driver.FormatBytes(uint64(n))
	}
	c := &pod.Spec.Containers[0]
	one := *resource.NewQuantity(1, resource.DecimalSI)
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Requests[CapacityResource] = one
	c.Resources.Limits[CapacityResource] = one
}
