package mobility

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// kubectl lvms evacuate moves every claim whose volume is on a node to the other nodes, one claim at
// a time (so a StatefulSet never has more than one replica stopped), after cordoning the node. Each
// claim goes to the schedulable node with the most free space in its device class, counting what the
// plan already sends there. It is one plan, asked once; run again, it resumes: claims already moved are
// no longer on the node, and a move that was interrupted resumes to the node it recorded.

// EvacuateOptions are the options of kubectl lvms evacuate.
type EvacuateOptions struct {
	// Node is the node to evacuate.
	Node string
	// Yes, StopWorkload, In, Terminal, Timeout, PollInterval: as in MoveOptions, for the whole plan.
	MoveOptions
}

// Evacuation is one claim's move in an evacuation plan.
type Evacuation struct {
	// Namespace and Claim name the claim; To is the node it goes to.
	Namespace, Claim, To string
	// Size is its volume's size in bytes, Class its device class.
	Size  int64
	Class string
}

// RunEvacuate moves every claim on opts.Node elsewhere.
func RunEvacuate(ctx context.Context, c client.Client, opts EvacuateOptions, out io.Writer) error {
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: opts.Node}, node); err != nil {
		return fmt.Errorf("%w: node %s: %w", ErrMoveRefused, opts.Node, err)
	}
	plan, stay, err := PlanEvacuation(ctx, c, opts.Node)
	if err != nil {
		return err
	}
	if !opts.StopWorkload {
		if err := noPodsUsing(ctx, c, plan); err != nil {
			return err
		}
	}
	w := func(format string, a ...any) { _, _ = fmt.Fprintf(out, format+"\n", a...) }
	w("Evacuate node %s: cordon it, then move %d claim(s), one at a time:", opts.Node, len(plan))
	for _, p := range plan {
		w("  - %s/%s (%s, device class %s) to node %s", p.Namespace, p.Claim, formatBytes(p.Size), p.Class, p.To)
	}
	for _, s := range stay {
		w("  ! stays on the node: %s", s)
	}
	if !opts.Yes {
		ok, err := confirm(opts.In, out)
		if err != nil || !ok {
			return errors.Join(err, fmt.Errorf("%w: not confirmed (answer y, or pass --yes)", ErrMoveRefused))
		}
	}
	if !node.Spec.Unschedulable {
		m := &mover{c: c, out: out}
		if err := m.setUnschedulable(ctx, opts.Node, true); err != nil {
			return err
		}
	}
	for i, p := range plan {
		w("[%d/%d] %s/%s to node %s", i+1, len(plan), p.Namespace, p.Claim, p.To)
		mo := opts.MoveOptions
		mo.Namespace, mo.Claim, mo.To, mo.Yes = p.Namespace, p.Claim, p.To, true
		if err := RunMove(ctx, c, mo, out); err != nil {
			return fmt.Errorf("evacuate node %s: %w", opts.Node, err)
		}
	}
	w("Node %s holds no claim's volume; it stays cordoned (kubectl uncordon %s).", opts.Node, opts.Node)
	return nil
}

// PlanEvacuation lists the claims whose volume is on node with the node each goes to, and what stays
// (snapshots, volumes without a claim). It refuses when a claim has nowhere to go.
func PlanEvacuation(ctx context.Context, c client.Reader, node string) ([]Evacuation, []string, error) {
	var pvs corev1.PersistentVolumeList
	if err := c.List(ctx, &pvs); err != nil {
		return nil, nil, fmt.Errorf("list PVs: %w", err)
	}
	var lvs topolvmv1.LogicalVolumeList
	if err := c.List(ctx, &lvs); err != nil {
		return nil, nil, fmt.Errorf("list LogicalVolumes: %w", err)
	}
	onNode := map[string]*topolvmv1.LogicalVolume{}
	for i := range lvs.Items {
		if lv := &lvs.Items[i]; lv.Spec.NodeName == node && lv.Status.VolumeID != "" {
			onNode[lv.Status.VolumeID] = lv
		}
	}
	free, err := freeByNode(ctx, c, node)
	if err != nil {
		return nil, nil, err
	}
	var plan []Evacuation
	var stay []string
	claimed := map[string]bool{}
	slices.SortFunc(
		pvs.Items,
		func(a, b corev1.PersistentVolume) int { return strings.Compare(claimKey(&a), claimKey(&b)) },
	)
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != driver.Name || onNode[pv.Spec.CSI.VolumeHandle] == nil {
			continue
		}
		lv := onNode[pv.Spec.CSI.VolumeHandle]
		claimed[lv.Status.VolumeID] = true
		if why := notMovable(ctx, c, pv); why != "" {
			stay = append(stay, fmt.Sprintf("PV %s (%s)", pv.Name, why))
			continue
		}
		p := Evacuation{Namespace: pv.Spec.ClaimRef.Namespace, Claim: pv.Spec.ClaimRef.Name,
			Size: lv.Spec.Size.Value(), Class: lv.Spec.DeviceClass, To: pv.Annotations[moveToAnnotation]}
		if p.To == "" {
			if p.To = pickNode(free, p.Class, p.Size); p.To == "" {
				return nil, nil, fmt.Errorf("%w: claim %s/%s (%s in device class %s) fits on no other schedulable node",
					ErrMoveRefused, p.Namespace, p.Claim, formatBytes(p.Size), p.Class)
			}
		}
		if f, ok := free[p.To]; ok { // a resumed move's node may be unschedulable by now
			f[p.Class] -= p.Size
		}
		plan = append(plan, p)
	}
	for id, lv := range onNode {
		if !claimed[id] {
			stay = append(stay, fmt.Sprintf("LogicalVolume %s (%s)", lv.Name, kindOf(lv)))
		}
	}
	slices.Sort(stay)
	return plan, stay, nil
}

// notMovable says why the claim of pv is not moved ("" when it is): pv has no bound claim, or the
// claim is being deleted. A PV that a move interrupted after deleting its claim is movable.
func notMovable(ctx context.Context, c client.Reader, pv *corev1.PersistentVolume) string {
	if pv.Annotations[moveToAnnotation] != "" && pv.Spec.ClaimRef != nil {
		return ""
	}
	if pv.Spec.ClaimRef == nil || pv.Status.Phase != corev1.VolumeBound {
		return fmt.Sprintf("%s, no bound claim", pv.Status.Phase)
	}
	claim := &corev1.PersistentVolumeClaim{}
	err := c.Get(ctx, client.ObjectKey{Namespace: pv.Spec.ClaimRef.Namespace, Name: pv.Spec.ClaimRef.Name}, claim)
	switch {
	case err != nil:
		return fmt.Sprintf("claim %s/%s: %v", pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name, err)
	case !claim.DeletionTimestamp.IsZero():
		return fmt.Sprintf("claim %s/%s is being deleted", claim.Namespace, claim.Name)
	}
	return ""
}

// noPodsUsing refuses the plan when pods use its claims.
func noPodsUsing(ctx context.Context, c client.Reader, plan []Evacuation) error {
	var busy []string
	for _, p := range plan {
		claim := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Claim}, claim); err != nil {
			continue // a move that deleted the claim; its pods wait for it
		}
		pods, err := PodsUsing(ctx, c, claim)
		if err != nil {
			return err
		}
		for _, pod := range pods {
			busy = append(busy, p.Namespace+"/"+pod)
		}
	}
	if len(busy) > 0 {
		return fmt.Errorf("%w: pods %s use claims on the node: stop them first, or pass --stop-workload (each "+
			"claim's pods are deleted when its move starts; their replacements wait for it, Pending)",
			ErrMoveRefused, strings.Join(busy, ", "))
	}
	return nil
}

func claimKey(pv *corev1.PersistentVolume) string {
	if pv.Spec.ClaimRef == nil {
		return "~" + pv.Name
	}
	return pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name
}

// kindOf says what a LogicalVolume without a PV is.
func kindOf(lv *topolvmv1.LogicalVolume) string {
	if lv.Spec.AccessType == topolvmv1.AccessTypeReadOnly {
		return "a snapshot: snapshots do not move; restore it on another node first if you need it"
	}
	return "no PV uses it"
}

// freeByNode is the free bytes per device class of every schedulable node but node.
func freeByNode(ctx context.Context, c client.Reader, node string) (map[string]map[string]int64, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	free := map[string]map[string]int64{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Name == node || n.Spec.Unschedulable {
			continue
		}
		free[n.Name] = map[string]int64{}
		for k := range n.Annotations {
			class, ok := strings.CutPrefix(k, driver.CapacityAnnotationPrefix)
			if !ok {
				continue
			}
			if b, present, err := driver.FreeBytes(n.Annotations, class); err == nil && present {
				free[n.Name][class] = int64(min(b, 1<<62))
			}
		}
	}
	return free, nil
}

// pickNode is the node with the most free bytes in class that holds size, "" when none does.
func pickNode(free map[string]map[string]int64, class string, size int64) string {
	best := ""
	for _, n := range slices.Sorted(maps.Keys(free)) {
		if f, ok := free[n][class]; ok && f >= size && (best == "" || f > free[best][class]) {
			best = n
		}
	}
	return best
}
