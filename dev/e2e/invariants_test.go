//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/demo"
)

// invariant is a row of the tables the chaos and upgrade tests print: what must hold, how many
// were wanted and how many were found.
type invariant struct {
	what      string
	want, got int
}

// logInvariants logs the rows as a table under title and reports whether every row holds.
func logInvariants(t *testing.T, title string, rows []invariant) bool {
	t.Helper()
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "INVARIANT (%s)\tWANT\tGOT\tOK\n", title)
	held := true
	for _, r := range rows {
		ok := r.want == r.got
		held = held && ok
		fmt.Fprintf(tw, "%s\t%d\t%d\t%v\n", r.what, r.want, r.got, ok)
	}
	_ = tw.Flush()
	t.Logf("invariants:\n%s", b.String())
	return held
}

// deleteAndCount deletes the test's pods, snapshots and claims, waits (up to chaosTimeout) for the
// driver to remove every LogicalVolume and PV, and returns the rows of what is left: LogicalVolumes,
// PVs of topolvm.io and the LVs of volumes (not thin pools) on the nodes.
func (e *env) deleteAndCount(nodes []string) []invariant {
	e.t.Helper()
	// Retried: right after a chaos fault the API server may still be away.
	e.apply("delete the test's pods", func(ctx context.Context) error {
		return e.c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(e.ns), client.GracePeriodSeconds(0))
	})
	e.apply("delete the test's snapshots", func(ctx context.Context) error {
		return e.c.DeleteAllOf(ctx, demo.NewSnapshot(e.ns, "", thinClass, ""), client.InNamespace(e.ns))
	})
	e.apply("delete the test's claims", func(ctx context.Context) error {
		return e.c.DeleteAllOf(ctx, &corev1.PersistentVolumeClaim{}, client.InNamespace(e.ns))
	})
	e.eventually("every claim and snapshot of the test gone", func(ctx context.Context) (bool, string, error) {
		var pvcs corev1.PersistentVolumeClaimList
		if err := e.c.List(ctx, &pvcs, client.InNamespace(e.ns)); err != nil {
			return false, "", err
		}
		return len(pvcs.Items) == 0, fmt.Sprintf("%d claims", len(pvcs.Items)), nil
	})
	e.t.Log("deleted every pod, snapshot and claim of the test")
	lvs, pvs := e.volumesLeft()
	onNodes := 0
	for _, node := range nodes {
		for line := range strings.SplitSeq(e.lvs(node), "\n") {
			f := strings.Fields(line)
			// Thin pools (attr t...) and their hidden parts are the device classes', not volumes.
			if len(f) == 4 && !strings.HasPrefix(f[3], "t") && !strings.HasPrefix(f[0], "[") {
				e.t.Logf("LV left on %s: %s", node, line)
				onNodes++
			}
		}
	}
	return []invariant{
		{"after deleting everything: LogicalVolumes left", 0, lvs},
		{"after deleting everything: PVs of topolvm.io left", 0, pvs},
		{"after deleting everything: LVs of volumes left on the nodes", 0, onNodes},
	}
}

// volumesLeft waits up to chaosTimeout for the driver to remove every LogicalVolume and PV of
// topolvm.io, and returns how many are left.
func (e *env) volumesLeft() (lvs, pvs int) {
	count := func(ctx context.Context) (int, int, error) {
		var lvList topolvmv1.LogicalVolumeList
		if err := e.c.List(ctx, &lvList); err != nil {
			return 0, 0, err
		}
		var pvList corev1.PersistentVolumeList
		if err := e.c.List(ctx, &pvList); err != nil {
			return 0, 0, err
		}
		n := 0
		for _, pv := range pvList.Items {
			if pv.Spec.CSI != nil && pv.Spec.CSI.Driver == "topolvm.io" {
				n++
			}
		}
		return len(lvList.Items), n, nil
	}
	ctx, cancel := context.WithTimeout(e.ctx(), chaosTimeout)
	defer cancel()
	for {
		l, p, err := count(ctx)
		if err == nil {
			lvs, pvs = l, p
			if l == 0 && p == 0 {
				return lvs, pvs
			}
		}
		if ctx.Err() != nil {
			return lvs, pvs
		}
		time.Sleep(2 * time.Second)
	}
}
