//go:build e2e

package e2e

import "testing"

// TestVolumeFlows runs the flows that share the cluster as users' claims do side by side, each in
// a namespace of its own, concurrently. The tests that need the cluster to themselves run alone:
// the node agent restart (which compares every LV of a node with the LogicalVolumes), placement by
// capacity (which fills the thick volume groups) and the LVMCluster's deletion (last).
func TestVolumeFlows(t *testing.T) {
	flows := []struct {
		name string
		run  func(*testing.T)
	}{
		{"VolumeModes", testVolumeModes},
		{"Expansion", testExpansion},
		{"SnapshotRestore", testSnapshotRestore},
		{"Clone", testClone},
		{"ThickSnapshots", testThickSnapshots},
		{"GenericEphemeralVolume", testGenericEphemeralVolume},
		{"ReadWriteOncePod", testReadWriteOncePod},
		{"DeletionRemovesLV", testDeletionRemovesLV},
	}
	for _, f := range flows {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			f.run(t)
		})
	}
}
