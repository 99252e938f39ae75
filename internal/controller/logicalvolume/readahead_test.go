package logicalvolume

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

func withReadAhead(r string) lvOpt {
	return func(lv *topolvmv1.LogicalVolume) { lv.Spec.ReadAhead = r }
}

func TestReadAhead(t *testing.T) {
	e := newEnv(t, newLV("plain"), newLV("tuned", class("thin"), withReadAhead("2048")))
	lvm2 := func(name string) lvm.ReadAhead {
		t.Helper()
		lv, ok := e.fake.State().LV("vg", "uid-"+name)
		if !ok {
			t.Fatalf("LV of %s not in lvm2", name)
		}
		return lv.ReadAhead
	}

	// A volume without spec.readAhead keeps lvcreate's default and gets no condition.
	e.mustReconcile("plain")
	if c := condition(e.get("plain"), topolvmv1.ConditionReadAheadSet); c.Type != "" ||
		e.fake.Count("lvchange") != 0 || lvm2("plain") != lvm.ReadAheadAuto {
		t.Fatalf("a volume without read-ahead: condition %+v, %d lvchange, lvm2 %q", c, e.fake.Count("lvchange"),
			lvm2("plain"))
	}

	// Created and set in one reconcile (a CreateVolume with mutable parameters).
	e.mustReconcile("tuned")
	c := condition(e.get("tuned"), topolvmv1.ConditionReadAheadSet)
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonReadAheadSet || c.ObservedGeneration != 1 ||
		lvm2("tuned") != "2048" {
		t.Fatalf("read-ahead 2048: condition %+v, lvm2 %q", c, lvm2("tuned"))
	}
	t.Logf("ReadAheadSet: %s", c.Message)

	// A resync of the same generation runs no lvm2 command.
	e.mustReconcile("tuned")
	if n := e.fake.Count("lvchange"); n != 1 {
		t.Fatalf("%d lvchange after a resync, want 1", n)
	}

	// lvchange fails: False, status.code set, retried; then set.
	e.fake.FailNext("lvchange", 5, "  device-mapper: reload ioctl on (253:4) failed: Invalid argument")
	e.update("tuned", func(lv *topolvmv1.LogicalVolume) { lv.Spec.ReadAhead = "auto" })
	if err := e.reconcile("tuned"); err == nil || isTerminal(err) {
		t.Fatalf("reconcile with lvchange failing: %v, want a retried error", err)
	}
	lv := e.get("tuned")
	if c := condition(lv, topolvmv1.ConditionReadAheadSet); c.Status != metav1.ConditionFalse ||
		c.ObservedGeneration != 2 || lv.Status.Code == 0 {
		t.Fatalf("failed lvchange: condition %+v, code %d", c, lv.Status.Code)
	}
	e.mustReconcile("tuned")
	lv = e.get("tuned")
	if c := condition(lv, topolvmv1.ConditionReadAheadSet); c.Status != metav1.ConditionTrue ||
		c.ObservedGeneration != 2 || lv.Status.Code != 0 || lvm2("tuned") != lvm.ReadAheadAuto {
		t.Fatalf("read-ahead auto: condition %+v, code %d, lvm2 %q", c, lv.Status.Code, lvm2("tuned"))
	}

	// A new generation for another reason (a resize) sets it again, which lvmd sees in place.
	before := e.fake.Count("lvchange")
	e.update("tuned", func(lv *topolvmv1.LogicalVolume) { lv.Spec.Size.Set(2 * gib) })
	e.mustReconcile("tuned")
	if c := condition(e.get("tuned"), topolvmv1.ConditionReadAheadSet); c.ObservedGeneration != 3 ||
		e.fake.Count("lvchange") != before {
		t.Fatalf("after a resize: condition %+v, %d lvchange (before %d)", c, e.fake.Count("lvchange"), before)
	}
}
