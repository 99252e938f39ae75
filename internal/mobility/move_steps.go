package mobility

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// mover runs the steps of one move; each step finds what an earlier, interrupted run did.
type mover struct {
	c    client.Client
	s    *moveState
	opts MoveOptions
	out  io.Writer
	// newLV is the LogicalVolume on the target node, once copied.
	newLV *topolvmv1.LogicalVolume
	// progress is the last progress line written.
	progress string
}

func (m *mover) say(format string, a ...any) { _, _ = fmt.Fprintf(m.out, format+"\n", a...) }

func (m *mover) run(ctx context.Context) error {
	for _, step := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"record the move", m.record},
		{"stop the workload", m.quiesce},
		{"copy", m.copy},
		{"bind the claim", m.bind},
		{"finish", m.finish},
	} {
		if err := step.run(ctx); err != nil {
			return fmt.Errorf("move %s/%s to node %s: %s: %w (run the same command again to resume)",
				m.opts.Namespace, m.opts.Claim, m.s.to, step.name, err)
		}
	}
	m.say("Moved claim %s/%s to node %s: PV %s.", m.opts.Namespace, m.opts.Claim, m.s.to, m.s.newName)
	return nil
}

// record writes the move into the old PV's annotations (the target, the claim as it is, the reclaim
// policy) and sets its reclaim policy to Retain, so that deleting the claim keeps the data.
func (m *mover) record(ctx context.Context) error {
	pv := m.s.oldPV
	if pv.Annotations[moveToAnnotation] != "" {
		return nil
	}
	saved, err := json.Marshal(claimToRecreate(m.s.claim))
	if err != nil {
		return fmt.Errorf("encode the claim: %w", err)
	}
	base := pv.DeepCopy()
	if pv.Annotations == nil {
		pv.Annotations = map[string]string{}
	}
	pv.Annotations[moveToAnnotation] = m.s.to
	pv.Annotations[moveClaimAnnotation] = string(saved)
	pv.Annotations[moveReclaimAnnotation] = string(pv.Spec.PersistentVolumeReclaimPolicy)
	pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	if err := m.c.Patch(ctx, pv, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}),
		client.FieldOwner(MoveFieldManager)); err != nil {
		return fmt.Errorf("annotate PV %s: %w", pv.Name, err)
	}
	return nil
}

// claimToRecreate is the claim as it is created again: its name, namespace, labels, annotations
// (without those of its binding and provisioning) and owner references, and its spec without the
// binding and data source (it is bound to the new PV).
func claimToRecreate(claim *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	out := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: claim.Name, Namespace: claim.Namespace, Labels: claim.Labels,
			OwnerReferences: claim.OwnerReferences},
		Spec: *claim.Spec.DeepCopy(),
	}
	for k, v := range claim.Annotations {
		switch k {
		case "pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
			"volume.kubernetes.io/selected-node", "volume.kubernetes.io/storage-provisioner",
			"volume.beta.kubernetes.io/storage-provisioner":
			continue
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[k] = v
	}
	out.Spec.VolumeName, out.Spec.DataSource, out.Spec.DataSourceRef = "", nil, nil
	return out
}

// quiesce cordons the source node and deletes the pods that use the claim, then waits until none
// runs: their replacements stay Pending (the claim's PV allows only the cordoned node).
func (m *mover) quiesce(ctx context.Context) error {
	if m.s.claim == nil {
		return nil
	}
	pods, err := PodsUsing(ctx, m.c, m.s.claim)
	if err != nil || len(pods) == 0 {
		return err
	}
	if !m.opts.StopWorkload {
		return fmt.Errorf("%w: pods %v use the claim (--stop-workload stops them)", ErrMoveRefused, pods)
	}
	if err := m.cordon(ctx); err != nil {
		return err
	}
	for _, name := range pods {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: m.s.claim.Namespace, Name: name}}
		if err := m.c.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete pod %s: %w", name, err)
		}
		m.say("Deleted pod %s/%s.", pod.Namespace, name)
	}
	return m.poll(ctx, func(ctx context.Context) (bool, error) {
		left, err := PodsUsing(ctx, m.c, m.s.claim)
		return len(left) == 0, err
	})
}

// cordon marks the source node unschedulable, recording on the old PV that the move did it.
func (m *mover) cordon(ctx context.Context) error {
	node := &corev1.Node{}
	if err := m.c.Get(ctx, client.ObjectKey{Name: m.s.from}, node); err != nil {
		return fmt.Errorf("read node %s: %w", m.s.from, err)
	}
	if node.Spec.Unschedulable {
		return nil
	}
	pv := m.s.oldPV
	base := pv.DeepCopy()
	pv.Annotations[moveCordonAnnotation] = "true"
	if err := m.c.Patch(ctx, pv, client.MergeFrom(base), client.FieldOwner(MoveFieldManager)); err != nil {
		return fmt.Errorf("annotate PV %s: %w", pv.Name, err)
	}
	return m.setUnschedulable(ctx, m.s.from, true)
}

// SetUnschedulable cordons (on) or uncordons the node, patching it as field manager owner.
func SetUnschedulable(ctx context.Context, c client.Client, node *corev1.Node, on bool, owner string) error {
	base := node.DeepCopy()
	node.Spec.Unschedulable = on
	if err := c.Patch(ctx, node, client.MergeFrom(base), client.FieldOwner(owner)); err != nil {
		return fmt.Errorf("set node %s unschedulable=%t: %w", node.Name, on, err)
	}
	return nil
}

func (m *mover) setUnschedulable(ctx context.Context, name string, on bool) error {
	node := &corev1.Node{}
	if err := m.c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return fmt.Errorf("read node %s: %w", name, err)
	}
	if err := SetUnschedulable(ctx, m.c, node, on, MoveFieldManager); err != nil {
		return err
	}
	if on {
		m.say("Cordoned node %s.", name)
	} else {
		m.say("Uncordoned node %s.", name)
	}
	return nil
}

// copy creates the LogicalVolume on the target node that copies the old one (through an image of it,
// made by the operator) and waits until its copy is verified, showing the progress.
func (m *mover) copy(ctx context.Context) error {
	want := m.desiredLV()
	err := m.c.Create(ctx, want, client.FieldOwner(MoveFieldManager))
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create LogicalVolume %s: %w", want.Name, err)
	}
	lv := &topolvmv1.LogicalVolume{}
	err = m.poll(ctx, func(ctx context.Context) (bool, error) {
		if err := m.c.Get(ctx, client.ObjectKey{Name: want.Name}, lv); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		m.showProgress(lv)
		if lv.Status.Code != 0 {
			return false, fmt.Errorf("node %s failed the copy: %s", m.s.to, lv.Status.Message)
		}
		return lv.Status.VolumeID != "", nil
	})
	m.endProgress()
	if err != nil && lv.Status.Code != 0 {
		// A failed copy is deleted, so that the next run starts it afresh.
		if derr := m.c.Delete(ctx, lv); client.IgnoreNotFound(derr) != nil {
			err = errors.Join(err, fmt.Errorf("delete LogicalVolume %s: %w", lv.Name, derr))
		}
	}
	m.newLV = lv
	return err
}

// desiredLV is the LogicalVolume of the new volume: on the target node, as large as the old one, in
// its device class, copying it from its node through an image.
func (m *mover) desiredLV() *topolvmv1.LogicalVolume {
	old := m.s.oldLV
	size := old.Spec.Size
	if cur := old.Status.CurrentSize; cur != nil && cur.Cmp(size) > 0 {
		size = *cur
	}
	annotations := map[string]string{driver.AnnotationCopyImage: "true",
		driver.AnnotationClaim: m.opts.Namespace + "/" + m.opts.Claim}
	if e := old.Annotations[driver.ParamEncryption]; e != "" {
		annotations[driver.ParamEncryption] = e
	}
	return &topolvmv1.LogicalVolume{
		ObjectMeta: metav1.ObjectMeta{Name: m.s.newName, Annotations: annotations},
		Spec: topolvmv1.LogicalVolumeSpec{
			Name: m.s.newName, NodeName: m.s.to, SourceNode: m.s.from, Source: old.Status.VolumeID,
			DeviceClass: old.Spec.DeviceClass, LvcreateOptionClass: old.Spec.LvcreateOptionClass,
			AccessType: topolvmv1.AccessTypeReadWrite, Size: *resource.NewQuantity(size.Value(), resource.BinarySI),
		},
	}
}

// showProgress writes the copy's progress when it changed: in place on a terminal, a line otherwise.
func (m *mover) showProgress(lv *topolvmv1.LogicalVolume) {
	t := lv.Status.Transfer
	if t == nil {
		return
	}
	size := lv.Spec.Size.Value()
	line := fmt.Sprintf("copy: %s, %s of %s verified, attempt %d", t.Phase, formatBytes(t.VerifiedBytes),
		formatBytes(size), t.Attempt)
	if m.opts.Terminal {
		const width = 30
		done := 0
		if size > 0 {
			done = int(min(t.VerifiedBytes, size) * width / size)
		}
		line = "[" + bar(done, width) + "] " + line
	}
	if line == m.progress {
		return
	}
	m.progress = line
	if m.opts.Terminal {
		_, _ = fmt.Fprintf(m.out, "\r%-100s", line)
		return
	}
	m.say("%s", line)
}

func (m *mover) endProgress() {
	if m.opts.Terminal && m.progress != "" {
		_, _ = fmt.Fprintln(m.out)
	}
}

func bar(done, width int) string {
	b := make([]byte, width)
	for i := range b {
		b[i] = '.'
		if i < done {
			b[i] = '#'
		}
	}
	return string(b)
}

// formatBytes is n in MiB with one decimal.
func formatBytes(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// poll runs f every PollInterval until it holds, fails, or ctx ends.
func (m *mover) poll(ctx context.Context, f func(context.Context) (bool, error)) error {
	return wait.PollUntilContextCancel(ctx, m.opts.PollInterval, true, f)
}
