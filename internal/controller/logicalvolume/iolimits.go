package logicalvolume

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

// IOLimiter puts a volume's IO caps in force in the pods that use it; the node agent's implements it
// with cgroup v2 io.max (package iolimit).
type IOLimiter interface {
	// Limit sets limits (nil: none) for every pod that has volume (a PV name, spec.name) published
	// and returns the number of pods capped.
	Limit(ctx context.Context, volume string, limits *topolvmv1.IOLimits) (int, error)
}

// Reasons of condition IOLimited.
const (
	ReasonIOLimited   = "Applied"
	ReasonUnlimited   = "Unlimited"
	ReasonNoIOLimiter = "NoIOLimiter"
)

// errNoIOLimiter: spec.ioLimits on an agent that was set up without an IOLimiter.
var errNoIOLimiter = errors.New("this node agent does not apply IO limits")

// ensureIOLimits puts spec.ioLimits in force in the pods that use the volume. A volume that never
// had caps is not looked at (no IOLimited condition); one whose caps were removed has them removed
// from its pods and keeps the condition, True with reason Unlimited.
func (r *Reconciler) ensureIOLimits(ctx context.Context, s *scope) error {
	limits := s.obj.Spec.IOLimits
	if limits == nil && meta.FindStatusCondition(s.status.Conditions, topolvmv1.ConditionIOLimited) == nil {
		return nil
	}
	if r.limiter == nil {
		s.setCondition(topolvmv1.ConditionIOLimited, errNoIOLimiter, ReasonNoIOLimiter, errNoIOLimiter.Error())
		return nil
	}
	n, err := r.limiter.Limit(ctx, s.obj.Spec.Name, limits)
	if err != nil {
		return s.fail(
			topolvmv1.ConditionIOLimited,
			fmt.Errorf("apply IO limits of volume %s: %w", s.obj.Spec.Name, err),
		)
	}
	if limits == nil {
		s.setCondition(topolvmv1.ConditionIOLimited, nil, ReasonUnlimited,
			fmt.Sprintf("no caps; removed from the %d pods using the volume", n))
		return nil
	}
	if n > 0 {
		ctrl.LoggerFrom(ctx).Info("Applied IO limits", "lv", s.name, "pods", n, "ioLimits", limits)
	}
	s.setCondition(topolvmv1.ConditionIOLimited, nil, ReasonIOLimited,
		fmt.Sprintf("caps in force in the %d pods using the volume; new pods get them when it is published", n))
	return nil
}
