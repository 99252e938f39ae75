package placement

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// PVNode is the node that a PV's node affinity names with the CSI topology key, or "".
func PVNode(pv *corev1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == driver.TopologyNodeKey && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

// LogicalVolumeSize is a LogicalVolume's status.currentSize, or its spec.size before the node
// reported one.
func LogicalVolumeSize(lv *topolvmv1.LogicalVolume) int64 {
	if lv.Status.CurrentSize != nil {
		return lv.Status.CurrentSize.Value()
	}
	return lv.Spec.Size.Value()
}

// WarningEvents returns the messages of the core/v1 Warning events about pvc, oldest first.
func WarningEvents(ctx context.Context, c client.Reader, pvc *corev1.PersistentVolumeClaim) ([]string, error) {
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
