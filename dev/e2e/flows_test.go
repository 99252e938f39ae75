//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestKubectlLVMS comes before TestVolumeFlows (go test runs a package's tests in the order of its
// files, and in a file in the order of their functions): its golden files hold what the plugin
// prints of every node's disks, and the flows' volumes leave entries behind in the nodes' status
// (the kubelet's loop devices of Block volumes, dm-crypt mappings) until the next discovery, up to a
// minute later.
//
// It runs the plugin as a user does, `kubectl lvms ...` found by kubectl on PATH
// (hack/e2e.sh builds it), against the real cluster, and compares what it prints with golden files:
// status, disks, volumes with a Bound claim of the test, and why on a claim larger than any volume
// group (its pod cannot be scheduled, so the claim stays Pending, and the operator's NotEnoughCapacity
// event on it says why in bytes). E2E_UPDATE_GOLDEN=1 rewrites them.
func TestKubectlLVMS(t *testing.T) {
	e := newEnv(t)
	e.claim("small", thickClass, "64Mi", false, "")
	// On node-0, as the golden file says: with both nodes' thick groups equally free the scheduler
	// may pick either.
	e.pod("small", "small", false, "node-0", "echo ok")
	e.finished("small")
	e.claim("huge", thickClass, "100Gi", false, "")
	e.pod("huge", "huge", false, "", "echo never")
	e.waitFor("pod huge unschedulable", func(ctx context.Context) (bool, string, error) {
		var pod corev1.Pod
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "huge"}, &pod); err != nil {
			return false, "", err
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
				return true, c.Message, nil
			}
		}
		return false, string(pod.Status.Phase), nil
	})
	// The operator explains the claim in an event, in bytes per node (internal/controller/claimevents).
	e.waitEvent("huge", "NotEnoughCapacity", "no node can hold 100Gi (107374182400 bytes) of device class thick: node-")

	for _, c := range []struct {
		golden string
		args   []string
		keep   func(string) string
	}{
		{"status", []string{"status"}, nil},
		{"disks", []string{"disks"}, nil},
		{"disks-node-1", []string{"disks", "node-1"}, nil},
		// Other tests' volumes come and go: keep the rows of this test's namespace.
		{"volumes", []string{"volumes"}, keepLines(`^NAMESPACE/PVC|^` + e.ns + `/`)},
		{"why-huge", []string{"why", "huge", "-n", e.ns}, nil},
		{"why-small", []string{"why", "small", "-n", e.ns}, nil},
	} {
		t.Run(c.golden, func(t *testing.T) {
			out := kubectl(t, append([]string{"lvms"}, c.args...)...)
			if c.keep != nil {
				out = c.keep(out)
			}
			got := normalize(out, e.ns)
			t.Logf("kubectl lvms %s:\n%s", strings.Join(c.args, " "), out)
			compareGolden(t, filepath.Join(goldenDir, c.golden+".golden"), got)
		})
	}
}

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
		{"EncryptedVolume", testEncryptedVolume},
		{"SnapshotMetadata", testSnapshotMetadata},
		{"CopiedStorageClass", testCopiedStorageClass},
		{"VolumeAttributesClass", testVolumeAttributesClass},
	}
	for _, f := range flows {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			f.run(t)
		})
	}
}
