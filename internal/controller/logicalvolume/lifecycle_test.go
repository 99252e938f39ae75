package logicalvolume

import (
	"slices"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"

	"google.golang.org/grpc/codes"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

func TestResize(t *testing.T) {
	tests := []struct {
		name        string
		lv          *topolvmv1.LogicalVolume
		newSize     int64
		wantSize    int64
		wantExtends int
		wantCode    codes.Code
		wantReason  string
	}{
		{
			name:        "thick grows",
			lv:          newLV("a"),
			newSize:     2 * gib,
			wantSize:    2 * gib,
			wantExtends: 1,
			wantReason:  ReasonResized,
		},
		{name: "thin grows, rounded up", lv: newLV("a", class("thin")), newSize: 2*gib + 1, wantSize: 2*gib + extent,
			wantExtends: 1, wantReason: ReasonResized},
		{name: "an LV already large enough is not touched", lv: newLV("a", size(gib+1)), newSize: gib + 2,
			wantSize: gib + extent, wantReason: ReasonResized},
		{name: "no space to grow", lv: newLV("a"), newSize: 20 * gib, wantSize: gib, wantExtends: 0,
			wantCode: codes.ResourceExhausted, wantReason: lvmd.ConditionInsufficientCapacity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.lv)
			e.mustReconcile(tt.lv.Name)
			e.update(tt.lv.Name, func(lv *topolvmv1.LogicalVolume) {
				lv.Spec.Size = *resource.NewQuantity(tt.newSize, resource.BinarySI)
			})
			e.fake.Reset()
			err := e.reconcile(tt.lv.Name)
			if (err != nil) != (tt.wantCode != codes.OK) || isTerminal(err) {
				t.Fatalf("reconcile error %v, want a retryable error: %v", err, tt.wantCode != codes.OK)
			}
			got := e.get(tt.lv.Name)
			if currentSize(got) != tt.wantSize {
				t.Errorf("currentSize %d, want %d", currentSize(got), tt.wantSize)
			}
			if n := e.fake.Count("lvextend"); n != tt.wantExtends {
				t.Errorf("lvextend ran %d times, want %d: %v", n, tt.wantExtends, e.fake.Calls())
			}
			if codes.Code(got.Status.Code) != tt.wantCode {
				t.Errorf("code %v, want %v", codes.Code(got.Status.Code), tt.wantCode)
			}
			c := condition(got, topolvmv1.ConditionResized)
			wantStatus := metav1.ConditionTrue
			if tt.wantCode != codes.OK {
				wantStatus = metav1.ConditionFalse
			}
			if c.Status != wantStatus || c.Reason != tt.wantReason || c.ObservedGeneration != 2 {
				t.Errorf("Resized = %+v, want %s/%s at generation 2", c, wantStatus, tt.wantReason)
			}
			if created := condition(got, topolvmv1.ConditionCreated); created.Status != metav1.ConditionTrue {
				t.Errorf("Created = %+v after a resize", created)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	tests := []struct {
		name          string
		lv            *topolvmv1.LogicalVolume
		create        bool // reconcile once before deleting
		setup         func(e *env)
		wantRemoves   int
		wantFinalizer bool // still there (removal failed)
	}{
		{name: "removes the LV, then the finalizer", lv: newLV("a"), create: true, wantRemoves: 1},
		{name: "a thin LV", lv: newLV("a", class("thin")), create: true, wantRemoves: 1},
		{name: "an LV created before the status was written", lv: newLV("a"), create: true, wantRemoves: 1,
			setup: func(e *env) {
				obj := e.get("a")
				obj.Status = topolvmv1.LogicalVolumeStatus{}
				if err := e.client.Status().Update(e.t.Context(), obj); err != nil {
					e.t.Fatal(err)
				}
			}},
		{name: "a missing LV is removed already", lv: newLV("a", volumeID("uid-a"), withFinalizer)},
		{name: "never created in an unknown class", lv: newLV("a", class("nope"), withFinalizer)},
		{name: "never created in a class without its VG", lv: newLV("a", class("missing"), withFinalizer)},
		{
			name:          "a failed lvremove keeps the finalizer",
			lv:            newLV("a"),
			create:        true,
			wantRemoves:   1,
			wantFinalizer: true,
			setup: func(e *env) {
				e.fake.FailNext("lvremove", 5, "  Logical volume vg/uid-a contains a filesystem in use.\n")
			},
		},
		{name: "a recorded LV in a class without its VG keeps the finalizer",
			lv: newLV("a", class("missing"), volumeID("uid-a"), withFinalizer), wantFinalizer: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.lv)
			if tt.create {
				e.mustReconcile("a")
			}
			if tt.setup != nil {
				tt.setup(e)
			}
			if err := e.client.Delete(t.Context(), e.get("a")); err != nil {
				t.Fatal(err)
			}
			e.fake.Reset()
			err := e.reconcile("a")
			if (err != nil) != tt.wantFinalizer {
				t.Fatalf("reconcile error %v, want error: %v", err, tt.wantFinalizer)
			}
			if n := e.fake.Count("lvremove"); n != tt.wantRemoves {
				t.Errorf("lvremove ran %d times, want %d", n, tt.wantRemoves)
			}
			var obj topolvmv1.LogicalVolume
			getErr := e.client.Get(t.Context(), types.NamespacedName{Name: "a"}, &obj)
			if tt.wantFinalizer {
				if getErr != nil || !slices.Contains(obj.Finalizers, Finalizer) {
					t.Errorf("object %v (%v), want it kept with the finalizer", obj.Finalizers, getErr)
				}
				return
			}
			if !isNotFound(getErr) {
				t.Errorf("object still there (%v) with finalizers %v", getErr, obj.Finalizers)
			}
			if lvs, _ := e.svc.ListLVs(t.Context(), tt.lv.Spec.DeviceClass); len(lvs) != 0 {
				t.Errorf("LVs left: %v", lvs)
			}
		})
	}
}

func withFinalizer(lv *topolvmv1.LogicalVolume) { lv.Finalizers = append(lv.Finalizers, Finalizer) }
