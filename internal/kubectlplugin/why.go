package kubectlplugin

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-helpers/storage/volume"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// EventInvolvedObjectName is the field selector of core/v1 Events on the name of their object. Tests
// with a fake client index Events under it.
const EventInvolvedObjectName = "involvedObject.name"

// WhyReport is what kubectl lvms why shows about one PersistentVolumeClaim.
type WhyReport struct {
	Namespace string `json:"namespace"`
	Claim     string `json:"claim"`
	Phase     string `json:"phase"`
	// Bound is the claim's volume when the claim is Bound; only RequestedBytes and Verdict are set
	// besides it then.
	Bound *BoundVolume `json:"bound,omitempty"`

	StorageClass      string `json:"storageClass,omitempty"`
	Provisioner       string `json:"provisioner,omitempty"`
	VolumeBindingMode string `json:"volumeBindingMode,omitempty"`
	// StorageClassProblem says why the claim's StorageClass cannot give it a volume of this driver.
	StorageClassProblem string `json:"storageClassProblem,omitempty"`
	// DeviceClass is the StorageClass's device class; DefaultDeviceClass tells that the StorageClass
	// names none and it is the LVMCluster's default.
	DeviceClass        string `json:"deviceClass,omitempty"`
	DefaultDeviceClass bool   `json:"defaultDeviceClass,omitempty"`
	RequestedBytes     int64  `json:"requestedBytes"`
	// SelectedNode is the node the scheduler chose for the claim (annotation
	// volume.kubernetes.io/selected-node), if any.
	SelectedNode string `json:"selectedNode,omitempty"`
	// Nodes has one entry per Node of the cluster, sorted by name, when the device class is known.
	Nodes []NodeFit `json:"nodes,omitempty"`
	// Events are the messages of the claim's Warning events, oldest first.
	Events  []string `json:"events,omitempty"`
	Verdict string   `json:"verdict"`
}

// BoundVolume is where a Bound claim's data is.
type BoundVolume struct {
	PersistentVolume string `json:"persistentVolume"`
	Driver           string `json:"driver,omitempty"`
	Node             string `json:"node,omitempty"`
	DeviceClass      string `json:"deviceClass,omitempty"`
	SizeBytes        int64  `json:"sizeBytes"`
	VolumeID         string `json:"volumeID,omitempty"`
}

// Fit is how a node's device class compares with a claim's request.
type Fit string

// Fits of NodeFit.
const (
	// FitFits: the node's capacity annotation is at least the request.
	FitFits Fit = "Fits"
	// FitTooSmall: the node's capacity annotation is below the request.
	FitTooSmall Fit = "DoesNotFit"
	// FitNotOnNode: the node has neither the device class's volume group nor its capacity annotation.
	FitNotOnNode Fit = "NotOnNode"
	// FitNotReady: the node reports the device class Progressing, Degraded or Failed.
	FitNotReady Fit = "NotReady"
	// FitUnknown: the volume group is Ready but its capacity annotation is missing or unreadable.
	FitUnknown Fit = "Unknown"
)

// NodeFit is one node's device class against the claim's request.
type NodeFit struct {
	Node string `json:"node"`
	Fit  Fit    `json:"fit"`
	// FreeBytes is the node's annotation capacity.topolvm.io/<device class>: the bytes a new volume
	// can get (for a thin device class, what the overprovisioned pool can still promise).
	FreeBytes *int64 `json:"freeBytes,omitempty"`
	// State and Reason are the node's report of the volume group, when it has one.
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// RunWhy is kubectl lvms why <pvc>.
func RunWhy(ctx context.Context, c client.Reader, opts Options, args []string, out io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("why takes one PersistentVolumeClaim name, got %d arguments", len(args))
	}
	report, err := Why(ctx, c, opts.OperatorNamespace, client.ObjectKey{Namespace: opts.Namespace, Name: args[0]})
	if err != nil {
		return err
	}
	return writeReport(out, opts.Output, report, report.writeTable)
}

// Why explains the claim key; operatorNamespace holds the LVMCluster and the node statuses.
func Why(ctx context.Context, c client.Reader, operatorNamespace string, key client.ObjectKey) (*WhyReport, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := c.Get(ctx, key, &pvc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("PersistentVolumeClaim %s not found (use -n for another namespace)", key)
		}
		return nil, fmt.Errorf("get PersistentVolumeClaim %s: %w", key, err)
	}
	r := &WhyReport{Namespace: pvc.Namespace, Claim: pvc.Name, Phase: string(pvc.Status.Phase)}
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		r.RequestedBytes = q.Value()
	}
	if pvc.Status.Phase == corev1.ClaimBound {
		bound, err := boundVolume(ctx, c, pvc.Spec.VolumeName)
		if err != nil {
			return nil, err
		}
		r.Bound = bound
		r.Verdict = r.verdict()
		return r, nil
	}
	r.SelectedNode = pvc.Annotations[volume.AnnSelectedNode]
	if err := r.resolveStorageClass(ctx, c, operatorNamespace, pvc.Spec.StorageClassName); err != nil {
		return nil, err
	}
	if r.DeviceClass != "" {
		nodes, err := nodeFits(ctx, c, operatorNamespace, r.DeviceClass, r.RequestedBytes)
		if err != nil {
			return nil, err
		}
		r.Nodes = nodes
	}
	events, err := warningEvents(ctx, c, &pvc)
	if err != nil {
		return nil, err
	}
	r.Events = events
	r.Verdict = r.verdict()
	return r, nil
}

// boundVolume reads the PV of a Bound claim and its LogicalVolume.
func boundVolume(ctx context.Context, c client.Reader, pvName string) (*BoundVolume, error) {
	var pv corev1.PersistentVolume
	if err := c.Get(ctx, client.ObjectKey{Name: pvName}, &pv); err != nil {
		return nil, fmt.Errorf("get PersistentVolume %s of the claim: %w", pvName, err)
	}
	b := &BoundVolume{PersistentVolume: pv.Name, Node: pvNode(&pv)}
	if q, ok := pv.Spec.Capacity[corev1.ResourceStorage]; ok {
		b.SizeBytes = q.Value()
	}
	if pv.Spec.CSI == nil {
		return b, nil
	}
	b.Driver, b.VolumeID = pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle
	if b.Driver != driverName {
		return b, nil
	}
	var lvs topolvmv1.LogicalVolumeList
	if err := c.List(ctx, &lvs); err != nil {
		return nil, fmt.Errorf("list LogicalVolumes: %w", err)
	}
	for i := range lvs.Items {
		if lv := &lvs.Items[i]; lv.Status.VolumeID == b.VolumeID {
			var v Volume
			v.fillFrom(lv)
			b.Node, b.DeviceClass, b.SizeBytes = v.Node, v.DeviceClass, v.SizeBytes
		}
	}
	return b, nil
}

// resolveStorageClass sets the StorageClass fields and the device class, or StorageClassProblem.
func (r *WhyReport) resolveStorageClass(
	ctx context.Context, c client.Reader, operatorNamespace string, name *string,
) error {
	if name == nil || *name == "" {
		r.StorageClassProblem = "the claim names no StorageClass and none was defaulted: " +
			"set spec.storageClassName (e.g. lvms-<device class>) in a new claim"
		return nil
	}
	r.StorageClass = *name
	var sc storagev1.StorageClass
	err := c.Get(ctx, client.ObjectKey{Name: *name}, &sc)
	if apierrors.IsNotFound(err) {
		r.StorageClassProblem = fmt.Sprintf("StorageClass %s does not exist: create it, or recreate the claim "+
			"with an existing storageClassName (kubectl get storageclass)", *name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("get StorageClass %s: %w", *name, err)
	}
	r.Provisioner = sc.Provisioner
	if sc.VolumeBindingMode != nil {
		r.VolumeBindingMode = string(*sc.VolumeBindingMode)
	}
	if sc.Provisioner != driverName {
		r.StorageClassProblem = fmt.Sprintf("StorageClass %s is provisioned by %s, not by %s: lvms does not "+
			"provision this claim", *name, sc.Provisioner, driverName)
		return nil
	}
	r.DeviceClass = sc.Parameters[paramDeviceClass]
	if r.DeviceClass != "" {
		return nil
	}
	def, err := defaultDeviceClass(ctx, c, operatorNamespace)
	if err != nil {
		return err
	}
	if def == "" {
		r.StorageClassProblem = fmt.Sprintf("StorageClass %s names no device class (parameter %s) and no "+
			"LVMCluster in %s has a default device class", *name, paramDeviceClass, operatorNamespace)
		return nil
	}
	r.DeviceClass, r.DefaultDeviceClass = def, true
	return nil
}

// defaultDeviceClass is the device class marked default in the LVMClusters of namespace, or "".
func defaultDeviceClass(ctx context.Context, c client.Reader, namespace string) (string, error) {
	var clusters lvmv1alpha1.LVMClusterList
	if err := c.List(ctx, &clusters, client.InNamespace(namespace)); err != nil {
		return "", fmt.Errorf("list LVMClusters in %s: %w", namespace, err)
	}
	slices.SortFunc(clusters.Items, func(a, b lvmv1alpha1.LVMCluster) int { return cmp.Compare(a.Name, b.Name) })
	for _, lc := range clusters.Items {
		for _, dc := range lc.Spec.Storage.DeviceClasses {
			if dc.Default {
				return dc.Name, nil
			}
		}
	}
	return "", nil
}

// nodeFits compares every node's capacity for deviceClass with requested bytes.
func nodeFits(
	ctx context.Context, c client.Reader, operatorNamespace, deviceClass string, requested int64,
) ([]NodeFit, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list Nodes: %w", err)
	}
	statuses, err := listNodeStatuses(ctx, c, operatorNamespace)
	if err != nil {
		return nil, err
	}
	vgOf := map[string]*lvmv1alpha1.VGStatus{}
	for _, ns := range statuses {
		for i := range ns.Spec.LiveNodeStatus {
			if vg := &ns.Spec.LiveNodeStatus[i]; vg.Name == deviceClass {
				vgOf[ns.Name] = vg
			}
		}
	}
	out := make([]NodeFit, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		out = append(out, nodeFit(&n, vgOf[n.Name], deviceClass, requested))
	}
	slices.SortFunc(out, func(a, b NodeFit) int { return cmp.Compare(a.Node, b.Node) })
	return out, nil
}

// nodeFit judges one node: a volume group the node reports not Ready is not a candidate whatever its
// annotation says; otherwise the capacity annotation decides.
func nodeFit(n *corev1.Node, vg *lvmv1alpha1.VGStatus, deviceClass string, requested int64) NodeFit {
	f := NodeFit{Node: n.Name}
	if vg != nil {
		f.State, f.Reason = vgState(*vg), vg.Reason
	}
	key := capacityAnnotationPrefix + deviceClass
	raw, annotated := n.Annotations[key]
	if annotated {
		if free, err := strconv.ParseInt(raw, 10, 64); err == nil {
			f.FreeBytes = &free
		}
	}
	switch {
	case vg != nil && f.State != string(lvmv1alpha1.VGStatusReady):
		f.Fit = FitNotReady
	case vg == nil && !annotated:
		f.Fit = FitNotOnNode
	case f.FreeBytes == nil:
		f.Fit = FitUnknown
		f.Reason = fmt.Sprintf("annotation %s is missing", key)
		if annotated {
			f.Reason = fmt.Sprintf("annotation %s is %q, not a number of bytes", key, raw)
		}
	case *f.FreeBytes >= requested:
		f.Fit = FitFits
	default:
		f.Fit = FitTooSmall
	}
	return f
}

// warningEvents returns the messages of the Warning events about pvc, oldest first.
func warningEvents(ctx context.Context, c client.Reader, pvc *corev1.PersistentVolumeClaim) ([]string, error) {
	var list corev1.EventList
	if err := c.List(ctx, &list, client.InNamespace(pvc.Namespace),
		client.MatchingFields{EventInvolvedObjectName: pvc.Name}); err != nil {
		return nil, fmt.Errorf("list events of PersistentVolumeClaim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	events := slices.DeleteFunc(list.Items, func(e corev1.Event) bool {
		o := e.InvolvedObject
		return e.Type != corev1.EventTypeWarning || o.Kind != "PersistentVolumeClaim" || o.Name != pvc.Name ||
			(o.UID != "" && pvc.UID != "" && o.UID != pvc.UID)
	})
	slices.SortFunc(events, func(a, b corev1.Event) int {
		return cmp.Or(eventTime(a).Compare(eventTime(b)), cmp.Compare(a.Name, b.Name))
	})
	var msgs []string // nil without events, as -o json decodes an omitted list
	for _, e := range events {
		msgs = append(msgs, e.Message)
	}
	return msgs, nil
}

// eventTime is when an event last happened, from whichever time field its reporter set.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	default:
		return e.CreationTimestamp.Time
	}
}
