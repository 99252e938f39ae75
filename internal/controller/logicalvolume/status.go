package logicalvolume

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	topolvmac "github.com/lvm-operator/lvm-operator/api/topolvm/v1/applyconfiguration/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// Condition reasons of this package; a failure's reason comes from lvmd's table (lvmd.Describe:
// lvmd.ConditionInsufficientCapacity, ...). A False condition always comes with status.code
// (classify), which is what the CSI controller returns.
const (
	ReasonCreated        = "Created"
	ReasonResized        = "Resized"
	ReasonSourceNotFound = "SourceNotFound"
)

var (
	// errSourceNotFound: the snapshot or clone source does not exist on this node.
	errSourceNotFound = errors.New("source LV not found")
	// errVanished: an LV recorded in status.volumeID no longer exists.
	errVanished = errors.New("LV vanished")
)

// failure describes how an error is reported: the gRPC code of status.code, the condition reason,
// and whether retrying the same spec can succeed.
type failure struct {
	code     codes.Code
	reason   string
	terminal bool
}

// classify maps an error of lvmd (or of this package) to its report by lvmd's reason table
// (lvmd.Describe): the gRPC code, the condition reason, and whether it is terminal. The two failures
// of this package itself are terminal NotFound.
func classify(err error) failure {
	switch {
	case errors.Is(err, errVanished):
		return failure{codes.NotFound, lvmd.ConditionNotFound, true}
	case errors.Is(err, errSourceNotFound):
		return failure{codes.NotFound, ReasonSourceNotFound, true}
	}
	r := lvmd.Describe(err)
	return failure{code: r.Code, reason: r.Condition, terminal: !r.Retry}
}

// retryable returns err for the work queue: terminal failures as reconcile.TerminalError (no requeue;
// a new generation is reconciled again), others as they are (requeued with backoff).
func retryable(err error) error {
	if err == nil || errors.Is(err, reconcile.TerminalError(nil)) || !classify(err).terminal {
		return err
	}
	return reconcile.TerminalError(err)
}

// setCondition sets condition typ: True when err is nil, else False.
func (s *scope) setCondition(typ string, err error, reason, msg string) {
	st := metav1.ConditionTrue
	if err != nil {
		st = metav1.ConditionFalse
	}
	meta.SetStatusCondition(&s.status.Conditions, metav1.Condition{
		Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: s.obj.Generation,
	})
}

// fail records err as the reconcile's failure, sets condition typ False and returns err.
func (s *scope) fail(typ string, err error) error {
	if s.failure == nil {
		s.failure = err
	}
	s.setCondition(typ, err, classify(err).reason, err.Error())
	return err
}

// agentConditions are the condition types the node agent owns (the only ones its status apply
// writes).
var agentConditions = []string{
	topolvmv1.ConditionCreated, topolvmv1.ConditionResized, topolvmv1.ConditionCopied,
	topolvmv1.ConditionIOLimited, topolvmv1.ConditionReadAheadSet,
}

// applyStatus derives the status from the scope and applies it unless it is unchanged.
func (r *Reconciler) applyStatus(ctx context.Context, s *scope) error {
	st := &s.status
	if s.lv != nil && copied(s.obj, st) {
		st.VolumeID = s.name
		st.CurrentSize = resource.NewQuantity(int64(deviceSize(s.lv, s.obj.Spec.Size.Value())), resource.BinarySI)
	}
	st.Code, st.Message = 0, ""
	if s.failure != nil {
		st.Code, st.Message = uint32(classify(s.failure).code), s.failure.Error()
	} else {
		st.ObservedGeneration = s.obj.Generation
	}
	if equality.Semantic.DeepEqual(*st, s.obj.Status) {
		return nil
	}
	ac := topolvmac.LogicalVolume(s.obj.Name).WithStatus(statusApplyConfiguration(st))
	if err := r.client.Status().Apply(ctx, ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("apply status of LogicalVolume %s: %w", s.obj.Name, err))
	}
	return nil
}

// deviceSize is the size of the LV's device as a consumer sees it. lvmd reports a thick
// copy-on-write snapshot's size as that of its copy-on-write store, which is larger than its device
// (the store holds metadata too); the device has its origin's size, which is the spec size of a
// snapshot, restore or clone of the same size.
func deviceSize(lv *lvmd.LV, specSize int64) uint64 {
	if lv.Origin != "" && lv.ThinPool == "" && specSize > 0 {
		return min(lv.Size, uint64(specSize))
	}
	return lv.Size
}

// statusApplyConfiguration is the whole status this agent owns: unset fields are dropped.
func statusApplyConfiguration(st *topolvmv1.LogicalVolumeStatus) *topolvmac.LogicalVolumeStatusApplyConfiguration {
	ac := topolvmac.LogicalVolumeStatus()
	if st.VolumeID != "" {
		ac.WithVolumeID(st.VolumeID)
	}
	if st.Code != 0 {
		ac.WithCode(st.Code).WithMessage(st.Message)
	}
	if st.CurrentSize != nil {
		ac.WithCurrentSize(*st.CurrentSize)
	}
	if st.ObservedGeneration != 0 {
		ac.WithObservedGeneration(st.ObservedGeneration)
	}
	if t := st.Transfer; t != nil {
		ac.WithTransfer(transferApplyConfiguration(t))
	}
	for _, c := range st.Conditions {
		if !slices.Contains(agentConditions, c.Type) {
			continue
		}
		ac.WithConditions(metav1ac.Condition().WithType(c.Type).WithStatus(c.Status).
			WithReason(c.Reason).WithMessage(c.Message).WithObservedGeneration(c.ObservedGeneration).
			WithLastTransitionTime(c.LastTransitionTime))
	}
	return ac
}

// copied reports whether a LogicalVolume's LV holds its data: always, unless its source is on
// another node and the copy is not complete. Only then does it get its volume ID.
func copied(obj *topolvmv1.LogicalVolume, st *topolvmv1.LogicalVolumeStatus) bool {
	return obj.Spec.SourceNode == "" || st.VolumeID != "" ||
		(st.Transfer != nil && st.Transfer.Phase == topolvmv1.TransferComplete)
}

// transferApplyConfiguration is the part of status.transfer this agent owns: everything but the
// operator's token and the source's address.
func transferApplyConfiguration(t *topolvmv1.TransferStatus) *topolvmac.TransferStatusApplyConfiguration {
	ac := topolvmac.TransferStatus()
	if t.Phase != "" {
		ac.WithPhase(t.Phase)
	}
	if t.Attempt != 0 {
		ac.WithAttempt(t.Attempt)
	}
	if t.VerifiedBytes != 0 {
		ac.WithVerifiedBytes(t.VerifiedBytes)
	}
	if t.CopiedBytes != 0 {
		ac.WithCopiedBytes(t.CopiedBytes)
	}
	if t.StartTime != nil {
		ac.WithStartTime(*t.StartTime)
	}
	if t.CompletionTime != nil {
		ac.WithCompletionTime(*t.CompletionTime)
	}
	if t.Message != "" {
		ac.WithMessage(t.Message)
	}
	return ac
}
