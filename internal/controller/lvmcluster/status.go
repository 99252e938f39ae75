package lvmcluster

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// Condition reasons.
const (
	ReasonAllReady          = "AllVolumeGroupsReady"
	ReasonProgressing       = "Progressing"
	ReasonDegraded          = "Degraded"
	ReasonFailed            = "Failed"
	ReasonNoNodes           = "NoNodeSelected"
	ReasonApplied           = "OperandsApplied"
	ReasonApplyFailed       = "ApplyFailed"
	ReasonPVCsExist         = "PersistentVolumeClaimsExist"
	ReasonTearingDown       = "TearingDown"
	ReasonDuplicateCluster  = "DuplicateLVMCluster"
	reasonWaitingForNode    = lvmv1alpha1.ReasonWaitingForNodeAgent
	reasonNodeStatusMissing = "NodeStatusMissing"
)

// selectedNodes are the nodes a device class applies to: they match its node selector, are
// schedulable, and carry no NoSchedule/NoExecute taint the LVMCluster does not tolerate.
func selectedNodes(dc *lvmv1alpha1.DeviceClass, tolerations []corev1.Toleration, nodes []corev1.Node) []string {
	var sel *nodeaffinity.LazyErrorNodeSelector
	if dc.NodeSelector != nil && len(dc.NodeSelector.NodeSelectorTerms) > 0 {
		sel = nodeaffinity.NewLazyErrorNodeSelector(dc.NodeSelector)
	}
	var out []string
	for i := range nodes {
		n := &nodes[i]
		if n.Spec.Unschedulable || !n.DeletionTimestamp.IsZero() {
			continue
		}
		if sel != nil {
			if ok, err := sel.Match(n); err != nil || !ok {
				continue
			}
		}
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, tolerations,
			func(t *corev1.Taint) bool {
				return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
			}, false); untolerated {
			continue
		}
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

// aggregation is what the node statuses say about an LVMCluster.
type aggregation struct {
	deviceClasses []lvmv1alpha1.DeviceClassStatus
	state         lvmv1alpha1.LVMStateType
	condition     metav1.Condition // VolumeGroupsReady
}

// aggregate derives the status of every device class on every selected node from the node agents'
// reports, and the overall state: Failed if any volume group failed, else Degraded if any is
// degraded, else Progressing while any is not Ready or not reported, else Ready.
func aggregate(
	c *lvmv1alpha1.LVMCluster,
	nodes []corev1.Node,
	reports []lvmv1alpha1.LVMVolumeGroupNodeStatus,
) aggregation {
	byNode := make(map[string]map[string]lvmv1alpha1.VGStatus, len(reports))
	for _, r := range reports {
		m := make(map[string]lvmv1alpha1.VGStatus, len(r.Spec.LiveNodeStatus))
		for _, vg := range r.Spec.LiveNodeStatus {
			m[vg.Name] = vg
		}
		byNode[r.Name] = m
	}
	worst := map[lvmv1alpha1.VGStatusType][]string{}
	total := 0
	out := aggregation{}
	for i := range c.Spec.Storage.DeviceClasses {
		dc := &c.Spec.Storage.DeviceClasses[i]
		dcs := lvmv1alpha1.DeviceClassStatus{Name: dc.Name}
		for _, node := range selectedNodes(dc, c.Spec.Tolerations, nodes) {
			total++
			vg, ok := byNode[node][dc.Name]
			if !ok {
				vg = lvmv1alpha1.VGStatus{
					Name:   dc.Name,
					Status: lvmv1alpha1.VGStatusProgressing,
					Reason: reasonWaitingForNode,
				}
			}
			if vg.Status == "" {
				vg.Status = lvmv1alpha1.VGStatusProgressing
			}
			if vg.Status != lvmv1alpha1.VGStatusReady {
				worst[vg.Status] = append(worst[vg.Status], describe(node, dc.Name, vg))
			}
			dcs.NodeStatus = append(dcs.NodeStatus, lvmv1alpha1.NodeStatus{VGStatus: vg, Node: node})
		}
		out.deviceClasses = append(out.deviceClasses, dcs)
	}
	out.state, out.condition = summarise(worst, total)
	if compactNodeStatuses(out.deviceClasses) {
		out.condition.Message += compactedNote(total)
	}
	return out
}

func describe(node, dc string, vg lvmv1alpha1.VGStatus) string {
	msg := fmt.Sprintf("node %s, device class %s: %s", node, dc, vg.Status)
	if vg.Reason != "" {
		msg += ": " + vg.Reason
	}
	return msg
}

func summarise(worst map[lvmv1alpha1.VGStatusType][]string, total int) (lvmv1alpha1.LVMStateType, metav1.Condition) {
	cond := metav1.Condition{Type: lvmv1alpha1.ConditionVolumeGroupsReady, Status: metav1.ConditionFalse}
	order := []struct {
		vg     lvmv1alpha1.VGStatusType
		state  lvmv1alpha1.LVMStateType
		reason string
	}{
		{lvmv1alpha1.VGStatusFailed, lvmv1alpha1.LVMStatusFailed, ReasonFailed},
		{lvmv1alpha1.VGStatusDegraded, lvmv1alpha1.LVMStatusDegraded, ReasonDegraded},
		{lvmv1alpha1.VGStatusProgressing, lvmv1alpha1.LVMStatusProgressing, ReasonProgressing},
	}
	for _, o := range order {
		if msgs := worst[o.vg]; len(msgs) > 0 {
			cond.Reason = o.reason
			cond.Message = joinCapped(msgs, maxConditionItems)
			return o.state, cond
		}
	}
	if total == 0 {
		cond.Reason = ReasonNoNodes
		cond.Message = "no schedulable node matches any device class (check nodeSelector, taints and tolerations)"
		return lvmv1alpha1.LVMStatusProgressing, cond
	}
	cond.Status = metav1.ConditionTrue
	cond.Reason = ReasonAllReady
	cond.Message = fmt.Sprintf("%d volume group(s) Ready", total)
	return lvmv1alpha1.LVMStatusReady, cond
}

// maxConditionItems bounds how many node problems a condition message lists.
const maxConditionItems = 10

func joinCapped(msgs []string, limit int) string {
	if len(msgs) <= limit {
		return strings.Join(msgs, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(msgs[:limit], "; "), len(msgs)-limit)
}
