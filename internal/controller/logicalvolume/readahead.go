package logicalvolume

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// ReasonReadAheadSet is the reason of condition ReadAheadSet when it is true.
const ReasonReadAheadSet = "Set"

// ensureReadAhead gives the LV spec.readAhead (an lvchange through lvmd, which runs nothing when
// its cache shows the setting in place), once per generation: condition ReadAheadSet of the
// object's generation says it is done, so a resync of many volumes runs no lvm2 command for it. A
// volume without spec.readAhead keeps what its LV has.
func ensureReadAhead(ctx context.Context, s *scope) error {
	want := s.obj.Spec.ReadAhead
	if want == "" {
		return nil
	}
	c := meta.FindStatusCondition(s.status.Conditions, topolvmv1.ConditionReadAheadSet)
	if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == s.obj.Generation {
		return nil
	}
	lv, err := s.lvm.ChangeLV(ctx, lvmd.ChangeLVRequest{
		Name: s.name, DeviceClass: s.obj.Spec.DeviceClass, ReadAhead: want,
	})
	if err != nil {
		return s.fail(topolvmv1.ConditionReadAheadSet, fmt.Errorf("set read-ahead %s of LV %s: %w", want, s.name, err))
	}
	if lv.ReadAhead != s.lv.ReadAhead {
		ctrl.LoggerFrom(ctx).Info("Set the read-ahead of the LV", "lv", s.name, "from", s.lv.ReadAhead,
			"to", lv.ReadAhead, "asked", want)
	}
	s.lv = &lv
	s.setCondition(topolvmv1.ConditionReadAheadSet, nil, ReasonReadAheadSet,
		fmt.Sprintf("read-ahead %s asked; lvm2 keeps %s (512-byte sectors)", want, lv.ReadAhead))
	return nil
}
