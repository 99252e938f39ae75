package logicalvolume

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

// fakeLimiter records what it was asked to apply and answers with pods and err.
type fakeLimiter struct {
	calls []*topolvmv1.IOLimits
	pods  int
	err   error
}

func (f *fakeLimiter) Limit(_ context.Context, volume string, l *topolvmv1.IOLimits) (int, error) {
	if volume == "" {
		return 0, errors.New("no volume name")
	}
	f.calls = append(f.calls, l.DeepCopy())
	return f.pods, f.err
}

func withLimits(l *topolvmv1.IOLimits) lvOpt {
	return func(lv *topolvmv1.LogicalVolume) { lv.Spec.IOLimits = l }
}

func TestIOLimits(t *testing.T) {
	caps := &topolvmv1.IOLimits{WriteBytesPerSecond: 1 << 20}
	e := newEnv(t, newLV("plain"), newLV("capped", withLimits(caps)))
	lim := &fakeLimiter{pods: 2}
	e.r.limiter = lim

	// A volume that never had caps is not looked at and gets no condition.
	e.mustReconcile("plain")
	if len(lim.calls) != 0 || condition(e.get("plain"), topolvmv1.ConditionIOLimited).Type != "" {
		t.Fatalf("a volume without caps: limiter calls %v, condition %+v", lim.calls,
			condition(e.get("plain"), topolvmv1.ConditionIOLimited))
	}

	e.mustReconcile("capped")
	c := condition(e.get("capped"), topolvmv1.ConditionIOLimited)
	if len(lim.calls) != 1 || *lim.calls[0] != *caps || c.Status != metav1.ConditionTrue ||
		c.Reason != ReasonIOLimited || c.ObservedGeneration != 1 {
		t.Fatalf("caps applied: calls %v, condition %+v", lim.calls, c)
	}
	t.Logf("IOLimited: %s", c.Message)

	// The pods' cgroups cannot take the caps: False with the reason, retried, status.code set.
	lim.err = errors.New("pod x: no io.max")
	e.update("capped", func(lv *topolvmv1.LogicalVolume) { lv.Spec.IOLimits.ReadIOPS = 10 })
	if err := e.reconcile("capped"); err == nil || isTerminal(err) {
		t.Fatalf("reconcile with a failing limiter: %v, want a retried error", err)
	}
	lv := e.get("capped")
	c = condition(lv, topolvmv1.ConditionIOLimited)
	if c.Status != metav1.ConditionFalse || c.ObservedGeneration != 2 || lv.Status.Code == 0 {
		t.Fatalf("failed caps: condition %+v, code %d", c, lv.Status.Code)
	}

	// Caps removed: removed from the pods, and the condition stays, True, Unlimited.
	lim.err = nil
	e.update("capped", func(lv *topolvmv1.LogicalVolume) { lv.Spec.IOLimits = nil })
	e.mustReconcile("capped")
	lv = e.get("capped")
	c = condition(lv, topolvmv1.ConditionIOLimited)
	if last := lim.calls[len(lim.calls)-1]; last != nil || c.Status != metav1.ConditionTrue ||
		c.Reason != ReasonUnlimited || c.ObservedGeneration != 3 || lv.Status.Code != 0 {
		t.Fatalf("caps removed: last call %+v, condition %+v, code %d", last, c, lv.Status.Code)
	}
}

// TestIOLimitsWithoutLimiter: an agent set up without a limiter reports that it cannot apply caps.
func TestIOLimitsWithoutLimiter(t *testing.T) {
	e := newEnv(t, newLV("capped", withLimits(&topolvmv1.IOLimits{ReadIOPS: 5})))
	e.mustReconcile("capped")
	c := condition(e.get("capped"), topolvmv1.ConditionIOLimited)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonNoIOLimiter {
		t.Fatalf("condition %+v, want False %s", c, ReasonNoIOLimiter)
	}
}
