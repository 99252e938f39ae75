package lvmcluster

import (
	"slices"
	"testing"
)

// TestTeardownOrderCoversEveryUnit: each operand is torn down exactly once, classes before volume
// groups, volume groups before the node agents that remove them.
func TestTeardownOrderCoversEveryUnit(t *testing.T) {
	var order, all []string
	for _, u := range teardownOrder() {
		if u.remove == nil {
			t.Fatalf("unit %q has no remove", u.name)
		}
		order = append(order, u.name)
	}
	for _, u := range units() {
		all = append(all, u.name)
	}
	if !slices.Equal(slices.Sorted(slices.Values(order)), slices.Sorted(slices.Values(all))) {
		t.Fatalf("teardown order %q, units %q", order, all)
	}
	pos := func(n string) int { return slices.Index(order, n) }
	if pos("StorageClasses") > pos(unitVolumeGroups) || pos("VolumeSnapshotClasses") > pos(unitVolumeGroups) ||
		pos(unitVolumeGroups) > pos("NodeDaemonSet") {
		t.Errorf("teardown order %q", order)
	}
}
