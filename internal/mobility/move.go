package mobility

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// kubectl lvms move copies a bound claim's data to another node and rebinds the claim there. A PV's node
// affinity is immutable, so the claim gets a new PV: the command creates a LogicalVolume on the target
// node that copies the old one (through a read-only snapshot of it, as a clone across nodes does), a PV
// for it pre-bound to the claim, then deletes the claim and creates it again under the same name,
// namespace, labels, annotations and owner references, bound to the new PV. The old PV keeps its data
// (its reclaim policy is Retain during the move) until the claim is Bound to the new one; then it is
// deleted, and with it the old LV. Every step is recorded in annotations of the old PV and can be run
// again: a move that was interrupted resumes where it stopped.

// Annotations a move records on the old PV (and, moveFromAnnotation, on the new one).
const (
	// moveToAnnotation names the target node of a move in progress.
	moveToAnnotation = "lvms.topolvm.io/move-to"
	// moveClaimAnnotation holds the claim as it was before the move (JSON), to create it again.
	moveClaimAnnotation = "lvms.topolvm.io/move-claim"
	// moveReclaimAnnotation holds the old PV's reclaim policy, which the new PV gets.
	moveReclaimAnnotation = "lvms.topolvm.io/move-reclaim-policy"
	// moveCordonAnnotation records that the move cordoned the source node (to uncordon it after).
	moveCordonAnnotation = "lvms.topolvm.io/move-cordoned"
	// moveFromAnnotation on the new PV names the old one.
	moveFromAnnotation = "lvms.topolvm.io/moved-from"
	// provisionedByAnnotation names the provisioner that deletes a PV's volume (external-provisioner).
	provisionedByAnnotation = "pv.kubernetes.io/provisioned-by"
)

// MoveFieldManager is the field manager of what move writes.
const MoveFieldManager = "kubectl-lvms-move"

// Defaults of MoveOptions.
const (
	DefaultMoveTimeout      = 2 * time.Hour
	DefaultMovePollInterval = 2 * time.Second
)

// ErrMoveRefused is wrapped by every refusal of move before it changed anything.
var ErrMoveRefused = errors.New("move refused")

// MoveOptions are the options of kubectl lvms move.
type MoveOptions struct {
	// Namespace is the claim's namespace.
	Namespace string
	// Claim is the name of the claim in Namespace; To the target node.
	Claim, To string
	// Yes moves without asking; StopWorkload deletes the pods that use the claim and keeps their
	// replacements from starting until the claim is on the target node (by cordoning the source node).
	Yes, StopWorkload bool
	// In answers the question (stdin); Terminal draws progress in place.
	In       io.Reader
	Terminal bool
	// Timeout bounds the whole move; PollInterval the waits (defaults above).
	Timeout, PollInterval time.Duration
}

// moveState is what move found: the claim, its PV and LV, the nodes and the new names.
type moveState struct {
	claim    *corev1.PersistentVolumeClaim // nil once deleted by an interrupted move
	oldPV    *corev1.PersistentVolume
	oldLV    *topolvmv1.LogicalVolume
	from, to string
	newName  string // of the new PV and its LogicalVolume
	pods     []string
	// finishing: the claim is bound to the new PV already; only the old PV is left to delete.
	finishing bool
}

// RunMove moves the claim opts.Claim to node opts.To.
func RunMove(ctx context.Context, c client.Client, opts MoveOptions, out io.Writer) error {
	if opts.Timeout == 0 {
		opts.Timeout = DefaultMoveTimeout
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = DefaultMovePollInterval
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	s, err := findMove(ctx, c, opts)
	if err != nil {
		return err
	}
	if s.finishing {
		_, _ = fmt.Fprintf(out, "Claim %s/%s is on node %s already (PV %s): finishing its move.\n", opts.Namespace,
			opts.Claim, opts.To, s.newName)
		m := &mover{c: c, s: s, opts: opts, out: out}
		return m.finish(ctx)
	}
	if err := s.check(ctx, c, opts); err != nil {
		return err
	}
	s.writePlan(out, opts)
	if !opts.Yes {
		ok, err := confirm(opts.In, out)
		if err != nil || !ok {
			return errors.Join(err, fmt.Errorf("%w: not confirmed (answer y, or pass --yes)", ErrMoveRefused))
		}
	}
	m := &mover{c: c, s: s, opts: opts, out: out}
	return m.run(ctx)
}

// findMove reads the claim (or, when an interrupted move deleted it, the old PV that records it), its
// PV and its LogicalVolume.
func findMove(ctx context.Context, c client.Client, opts MoveOptions) (*moveState, error) {
	s := &moveState{to: opts.To}
	claim := &corev1.PersistentVolumeClaim{}
	err := c.Get(ctx, client.ObjectKey{Namespace: opts.Namespace, Name: opts.Claim}, claim)
	switch {
	case apierrors.IsNotFound(err):
		if s.oldPV, err = recordedMove(ctx, c, opts.Namespace, opts.Claim); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("read claim %s/%s: %w", opts.Namespace, opts.Claim, err)
	default:
		s.claim = claim
		if s.oldPV, err = claimPV(ctx, c, claim); err != nil {
			return nil, err
		}
	}
	if from := s.oldPV.Annotations[moveFromAnnotation]; from != "" && s.claim != nil {
		return finishingMove(ctx, c, s, from)
	}
	if to := s.oldPV.Annotations[moveToAnnotation]; to != "" && to != opts.To {
		return nil, fmt.Errorf("%w: a move of claim %s/%s to node %s is in progress: finish it with --to %s",
			ErrMoveRefused, opts.Namespace, opts.Claim, to, to)
	}
	if s.oldLV, err = logicalVolumeOf(ctx, c, s.oldPV); err != nil {
		return nil, err
	}
	s.from = s.oldLV.Spec.NodeName
	sum := sha256.Sum256([]byte(string(s.oldPV.UID) + "/" + opts.To))
	s.newName = "lvms-move-" + hex.EncodeToString(sum[:8])
	return s, nil
}

// finishingMove is the state of a move whose claim is bound to the new PV (named newPV's
// moveFromAnnotation, from) already: what is left is to delete the old PV.
func finishingMove(ctx context.Context, c client.Reader, s *moveState, from string) (*moveState, error) {
	newPV := s.oldPV
	s.newName, s.finishing = newPV.Name, true
	old := &corev1.PersistentVolume{}
	err := c.Get(ctx, client.ObjectKey{Name: from}, old)
	switch {
	case apierrors.IsNotFound(err):
		old.Name = from
	case err != nil:
		return nil, fmt.Errorf("read PV %s: %w", from, err)
	}
	s.oldPV = old
	if old.Spec.CSI != nil {
		s.oldLV, _ = logicalVolumeOf(ctx, c, old)
	}
	if s.oldLV != nil {
		s.from = s.oldLV.Spec.NodeName
	}
	return s, nil
}

// claimPV is the topolvm.io PV the claim is bound to.
func claimPV(
	ctx context.Context,
	c client.Reader,
	claim *corev1.PersistentVolumeClaim,
) (*corev1.PersistentVolume, error) {
	if claim.Spec.VolumeName == "" || claim.Status.Phase != corev1.ClaimBound {
		return nil, fmt.Errorf("%w: claim %s/%s is not Bound (%s): only a bound claim's data can move",
			ErrMoveRefused, claim.Namespace, claim.Name, claim.Status.Phase)
	}
	pv := &corev1.PersistentVolume{}
	if err := c.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, pv); err != nil {
		return nil, fmt.Errorf("read PV %s of claim %s/%s: %w", claim.Spec.VolumeName, claim.Namespace, claim.Name, err)
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != driver.Name {
		return nil, fmt.Errorf("%w: PV %s of claim %s/%s is not a %s volume", ErrMoveRefused, pv.Name,
			claim.Namespace, claim.Name, driver.Name)
	}
	return pv, nil
}

// recordedMove is the old PV of an interrupted move of the claim ns/name, which deleted the claim.
func recordedMove(ctx context.Context, c client.Reader, ns, name string) (*corev1.PersistentVolume, error) {
	var pvs corev1.PersistentVolumeList
	if err := c.List(ctx, &pvs); err != nil {
		return nil, fmt.Errorf("list PVs: %w", err)
	}
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		ref := pv.Spec.ClaimRef
		if pv.Annotations[moveToAnnotation] != "" && ref != nil && ref.Namespace == ns && ref.Name == name {
			return pv, nil
		}
	}
	return nil, fmt.Errorf("%w: claim %s/%s not found", ErrMoveRefused, ns, name)
}

// logicalVolumeOf is the LogicalVolume whose volume ID is the PV's volume handle. The provisioner names
// it after the PV, so it is read by that name, and looked for among all only when that fails.
func logicalVolumeOf(ctx context.Context, c client.Reader, pv *corev1.PersistentVolume) (*topolvmv1.LogicalVolume,
	error) {
	id := pv.Spec.CSI.VolumeHandle
	named := &topolvmv1.LogicalVolume{}
	err := c.Get(ctx, client.ObjectKey{Name: pv.Name}, named)
	switch {
	case err == nil && named.Status.VolumeID == id:
		return named, nil
	case client.IgnoreNotFound(err) != nil:
		return nil, fmt.Errorf("read LogicalVolume %s: %w", pv.Name, err)
	}
	var lvs topolvmv1.LogicalVolumeList
	if err := c.List(ctx, &lvs); err != nil {
		return nil, fmt.Errorf("list LogicalVolumes: %w", err)
	}
	for i := range lvs.Items {
		if lvs.Items[i].Status.VolumeID == id {
			return &lvs.Items[i], nil
		}
	}
	return nil, fmt.Errorf("%w: no LogicalVolume has volume ID %s", ErrMoveRefused, id)
}

// check refuses a move that cannot work, before anything changes: a source that is a snapshot, the
// target node equal to the source's, a target without the device class or its room, pods using the
// claim without --stop-workload.
func (s *moveState) check(ctx context.Context, c client.Reader, opts MoveOptions) error {
	lv := s.oldLV
	switch {
	case lv.Spec.AccessType == topolvmv1.AccessTypeReadOnly:
		return fmt.Errorf("%w: volume %s is a snapshot", ErrMoveRefused, lv.Spec.Name)
	case s.from == s.to && s.claim != nil:
		return fmt.Errorf("%w: claim %s/%s is on node %s already", ErrMoveRefused, opts.Namespace, opts.Claim, s.to)
	}
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: s.to}, node); err != nil {
		return fmt.Errorf("%w: target node %s: %w", ErrMoveRefused, s.to, err)
	}
	free, present, err := driver.FreeBytes(node.Annotations, lv.Spec.DeviceClass)
	switch {
	case err != nil || !present:
		return fmt.Errorf("%w: node %s has no device class %s (no capacity annotation %s)", ErrMoveRefused,
			s.to, lv.Spec.DeviceClass, driver.CapacityAnnotation(lv.Spec.DeviceClass))
	case free < uint64(lv.Spec.Size.Value()) && s.oldPV.Annotations[moveToAnnotation] == "":
		return fmt.Errorf("%w: node %s has %d bytes free in device class %s, the volume needs %d", ErrMoveRefused,
			s.to, free, lv.Spec.DeviceClass, lv.Spec.Size.Value())
	}
	if s.claim == nil {
		return nil
	}
	if s.pods, err = PodsUsing(ctx, c, s.claim); err != nil {
		return err
	}
	if len(s.pods) > 0 && !opts.StopWorkload {
		return fmt.Errorf("%w: pods %s use claim %s/%s: stop them first, or pass --stop-workload (it deletes them "+
			"and cordons node %s until the claim is on node %s, so that their replacements wait)", ErrMoveRefused,
			strings.Join(s.pods, ", "), opts.Namespace, opts.Claim, s.from, s.to)
	}
	return nil
}

// PodsUsing are the names of the pods scheduled with the claim that have not finished.
func PodsUsing(ctx context.Context, c client.Reader, claim *corev1.PersistentVolumeClaim) ([]string, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(claim.Namespace)); err != nil {
		return nil, fmt.Errorf("list pods of namespace %s: %w", claim.Namespace, err)
	}
	var names []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if UsesClaim(p, claim.Name) {
			names = append(names, p.Name)
		}
	}
	return names, nil
}

// UsesClaim reports whether the pod mounts the claim of its namespace named claim.
func UsesClaim(pod *corev1.Pod, claim string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			return true
		}
	}
	return false
}

// writePlan says what move will do.
func (s *moveState) writePlan(out io.Writer, opts MoveOptions) {
	lv := s.oldLV
	w := func(format string, a ...any) { _, _ = fmt.Fprintf(out, format+"\n", a...) }
	w("Move claim %s/%s (PV %s, %s, device class %s) from node %s to node %s:", opts.Namespace, opts.Claim,
		s.oldPV.Name, lv.Spec.Size.String(), lv.Spec.DeviceClass, s.from, s.to)
	if s.oldPV.Annotations[moveToAnnotation] != "" {
		w("  (resuming a move that was interrupted)")
	}
	if len(s.pods) > 0 {
		w("  - cordon node %s and delete the pods using the claim: %s (their replacements wait)", s.from,
			strings.Join(s.pods, ", "))
	}
	w("  - copy the volume to node %s into a new volume %s (the claim's data as of now)", s.to, s.newName)
	w("  - create PV %s on node %s, delete claim %s and create it again, bound to it", s.newName, s.to, opts.Claim)
	w("  - then delete PV %s and its volume on node %s (reclaim policy %s moves to the new PV)", s.oldPV.Name,
		s.from, s.reclaimPolicy())
	if len(s.pods) > 0 {
		w("  - uncordon node %s; the pods start on node %s", s.from, s.to)
	}
}

// reclaimPolicy is the old PV's reclaim policy before the move.
func (s *moveState) reclaimPolicy() corev1.PersistentVolumeReclaimPolicy {
	if p := s.oldPV.Annotations[moveReclaimAnnotation]; p != "" {
		return corev1.PersistentVolumeReclaimPolicy(p)
	}
	return s.oldPV.Spec.PersistentVolumeReclaimPolicy
}

// confirm asks on out and reads the answer from in.
func confirm(in io.Reader, out io.Writer) (bool, error) {
	if _, err := fmt.Fprint(out, "Move? [y/N] "); err != nil {
		return false, fmt.Errorf("ask: %w", err)
	}
	if in == nil {
		return false, nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read the answer: %w", err)
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

// savedClaim is the claim recorded on the old PV.
func savedClaim(pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	claim := &corev1.PersistentVolumeClaim{}
	if err := json.Unmarshal([]byte(pv.Annotations[moveClaimAnnotation]), claim); err != nil {
		return nil, fmt.Errorf("read the claim recorded on PV %s (annotation %s): %w", pv.Name,
			moveClaimAnnotation, err)
	}
	return claim, nil
}
