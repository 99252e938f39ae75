//go:build e2e

package e2e

// This file is named to sort first: go test runs a package's tests in the order of its files, and
// the test here needs the fresh cluster without the LVMCluster that every other test's newEnv
// creates.

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// planTimeout is plan's --timeout: the operator starts a node agent on every node, and each plans.
const planTimeout = "5m"

// TestKubectlLVMSPlan previews the suite's LVMCluster with `kubectl lvms plan -f FILE` on the fresh
// cluster: the plan (equal to the golden file) says that every node would create each device class's
// volume group on its disks, with its thin pool, and no node has a volume group or a PV label on a
// disk afterwards. Removing the dry-run annotation applies the plan: the LVMCluster becomes Ready
// and the volume groups exist, for the tests that follow.
func TestKubectlLVMSPlan(t *testing.T) {
	fullSetOnly(t, "a dry-run plan of every node before the LVMCluster is applied: "+
		"a whole extra start of both agents, 5 to 10 min there")
	e := connect(t)
	cluster := e2eLVMCluster()
	err := e.c.Get(e.ctx(), client.ObjectKeyFromObject(cluster), &lvmv1alpha1.LVMCluster{})
	switch {
	case err == nil:
		t.Skip("LVMCluster e2e exists (a kept cluster): plan needs a fresh cluster without it")
	case !apierrors.IsNotFound(err):
		t.Fatalf("get LVMCluster e2e: %v", err)
	}
	cluster.TypeMeta = metav1.TypeMeta{APIVersion: lvmv1alpha1.GroupVersion.String(), Kind: "LVMCluster"}
	manifest, err := yaml.Marshal(cluster)
	if err != nil {
		t.Fatalf("encode the LVMCluster: %v", err)
	}
	file := filepath.Join(t.TempDir(), "lvmcluster.yaml")
	if err := os.WriteFile(file, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	// Whatever fails here, the tests that follow need the LVMCluster applied.
	t.Cleanup(e.endDryRun)

	out := kubectl(t, "lvms", "plan", "-f", file, "--timeout", planTimeout)
	t.Logf("kubectl lvms plan -f lvmcluster.yaml:\n%s", out)
	compareGolden(t, filepath.Join(goldenDir, "plan.golden"), normalize(out, e.ns))
	if !strings.Contains(out, "nothing was changed on any disk") {
		t.Errorf("the plan does not say that nothing was changed:\n%s", out)
	}
	nodes := e.nodes()
	for _, node := range []string{"node-0", "node-1"} {
		if !slices.Contains(nodes, node) {
			t.Fatalf("the cluster's nodes are %v, want node-0 and node-1", nodes)
		}
		for _, dc := range cluster.Spec.Storage.DeviceClasses {
			row := regexp.MustCompile(
				`(?m)^` + node + ` +` + dc.Name + ` +create volume group ` + dc.Name + ` on /dev/`,
			)
			if !row.MatchString(out) {
				t.Errorf("the plan has no row saying %s would create volume group %s:\n%s", node, dc.Name, out)
			}
		}
		vgs, pvs := e.volumeGroups(node)
		if len(vgs) > 0 || slices.ContainsFunc(pvs, func(pv string) bool { return strings.HasPrefix(pv, "/dev/ubd") }) {
			t.Errorf("node %s after the plan: volume groups %v, PVs %v; want none on the disks", node, vgs, pvs)
		}
	}

	kubectl(t, "annotate", "lvmcluster", cluster.Name, "-n", operatorNS, lvmv1alpha1.DryRunAnnotation+"-")
	e.waitForReady()
	for _, node := range nodes {
		vgs, _ := e.volumeGroups(node)
		for _, dc := range cluster.Spec.Storage.DeviceClasses {
			if !slices.Contains(vgs, dc.Name) {
				t.Errorf("node %s after applying the plan: volume groups %v, want %s among them", node, vgs, dc.Name)
			}
		}
	}
}

// volumeGroups returns the names of the volume groups and the physical volumes of node (vgsScript).
func (e *env) volumeGroups(node string) (vgs, pvs []string) {
	e.t.Helper()
	for _, l := range strings.Split(e.onAgent(node, vgsScript), "\n") {
		if rest, ok := strings.CutPrefix(l, "vgs:"); ok {
			vgs = strings.Fields(rest)
		}
		if rest, ok := strings.CutPrefix(l, "pvs:"); ok {
			pvs = strings.Fields(rest)
		}
	}
	return vgs, pvs
}

// endDryRun removes the dry-run annotation from the LVMCluster e2e if it is still there.
func (e *env) endDryRun() {
	ctx := context.Background() // the test's context is done when cleanups run
	var lc lvmv1alpha1.LVMCluster
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(e2eLVMCluster()), &lc); err != nil {
		return // not created: newEnv creates it
	}
	if _, ok := lc.Annotations[lvmv1alpha1.DryRunAnnotation]; !ok {
		return
	}
	patch := []byte(`{"metadata":{"annotations":{"` + lvmv1alpha1.DryRunAnnotation + `":null}}}`)
	if err := e.c.Patch(ctx, &lc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		e.t.Errorf("remove the dry-run annotation of LVMCluster e2e: %v", err)
	}
}
