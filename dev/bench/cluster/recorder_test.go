package main

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestLogicalVolumeMilestones: a LogicalVolume's watch events mark when it appeared, when its LV
// was created, when its deletion began and when it was gone, each at the first event that shows it.
func TestLogicalVolumeMilestones(t *testing.T) {
	r := newRecorder("run")
	start := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	event := 0 // the clock reads the second of the event being handled
	r.now = func() time.Time { return start.Add(time.Duration(event) * time.Second) }
	lv := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"name": "pvc-1"}}}
	event = 1
	r.onLV(lv)
	_ = unstructured.SetNestedField(lv.Object, "uuid", "status", "volumeID")
	event = 2
	r.onLV(lv)
	event = 3
	r.onLV(lv) // an update that changes none of them marks nothing
	lv.SetDeletionTimestamp(&metav1.Time{Time: start})
	event = 5
	r.onLV(lv)
	event = 6
	r.onLVDelete(lv)
	got := r.marks["lv/pvc-1"]
	for m, want := range map[string]int{mLVObject: 1, mLVCreated: 2, mLVDeleting: 5, mLVObjectGone: 6} {
		if got[m] != start.Add(time.Duration(want)*time.Second) {
			t.Errorf("%s at %v, want second %d", m, got[m], want)
		}
	}
}
