//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster"
	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/demo"
	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
)

// nodePolicyName is the operator's ValidatingAdmissionPolicy (and binding) that keeps each node agent
// to its own node.
const nodePolicyName = "lvms-node-agent-own-node"

// waitRollout waits until every pod of the product runs the image digest and is Ready, with no
// pod of another digest left (terminating ones included): the operator, and a node agent on every
// node once an LVMCluster exists; and until every webhook of the product has the CA bundle the
// operator injects.
func (u *upgrade) waitRollout(e *env, digest string) {
	e.t.Helper()
	e.waitForWithin(readyTimeout, "the product's pods on "+digest, func(ctx context.Context) (bool, string, error) {
		var clusters lvmv1alpha1.LVMClusterList
		if err := e.c.List(ctx, &clusters, client.InNamespace(operatorNS)); err != nil {
			return false, "", err
		}
		wantAgents := 0
		if len(clusters.Items) > 0 {
			wantAgents = len(e.nodes())
		}
		var pods corev1.PodList
		if err := e.c.List(ctx, &pods, client.InNamespace(operatorNS)); err != nil {
			return false, "", err
		}
		operators, agents, others := 0, 0, 0
		for _, p := range pods.Items {
			for _, c := range p.Spec.Containers {
				if !strings.HasPrefix(c.Image, productImage) {
					continue
				}
				if !strings.HasSuffix(c.Image, "@"+digest) || p.DeletionTimestamp != nil {
					others++
				} else if podReady(&p) {
					switch p.Labels["app.kubernetes.io/name"] {
					case "lvms-operator":
						operators++
					case lvmcluster.NodeDaemonSetName:
						agents++
					}
				}
				break
			}
		}
		saw := fmt.Sprintf(
			"ready on the digest: %d operator, %d/%d node agents; %d pods of another image or terminating",
			operators,
			agents,
			wantAgents,
			others,
		)
		return operators >= 1 && agents == wantAgents && others == 0, saw, nil
	})
	e.waitFor("the product's webhooks have a CA bundle", func(ctx context.Context) (bool, string, error) {
		var v admissionregistrationv1.ValidatingWebhookConfigurationList
		var m admissionregistrationv1.MutatingWebhookConfigurationList
		if err := e.c.List(ctx, &v); err != nil {
			return false, "", err
		}
		if err := e.c.List(ctx, &m); err != nil {
			return false, "", err
		}
		missing := devcluster.WebhooksWithoutCA(v.Items, m.Items)
		return len(missing) == 0, "no CA bundle: " + strings.Join(missing, ", "), nil
	})
}

// podReady reports the pod's Ready condition.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState is what says whether a pod restarted: its UID (a new pod has another) and its
// containers' restarts.
type podState struct {
	uid      types.UID
	restarts int32
}

// podsOutside returns the state of every pod outside namespace ns.
func (e *env) podsOutside(ns string) map[types.NamespacedName]podState {
	e.t.Helper()
	var pods corev1.PodList
	if err := e.c.List(e.ctx(), &pods); err != nil {
		e.t.Fatalf("list pods: %v", err)
	}
	states := map[types.NamespacedName]podState{}
	for _, p := range pods.Items {
		if p.Namespace == ns {
			continue
		}
		s := podState{uid: p.UID}
		for _, c := range p.Status.ContainerStatuses {
			s.restarts += c.RestartCount
		}
		states[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = s
	}
	return states
}

// samePods is the row of the pods of before that are still the same pod, Running, with no
// container restarted.
func (e *env) samePods(before map[types.NamespacedName]podState) invariant {
	e.t.Helper()
	row := invariant{what: "pods outside " + operatorNS + ": same pod, Running, no restart", want: len(before)}
	for key, was := range before {
		var p corev1.Pod
		if err := e.c.Get(e.ctx(), key, &p); err != nil {
			e.t.Logf("pod %s: %v", key, err)
			continue
		}
		now := e.podsOutside(operatorNS)[key]
		if now.uid != was.uid || now.restarts != was.restarts || p.Status.Phase != corev1.PodRunning {
			e.t.Logf("pod %s: uid %s -> %s, restarts %d -> %d, phase %s", key, was.uid, now.uid, was.restarts,
				now.restarts, p.Status.Phase)
			continue
		}
		row.got++
	}
	return row
}

// dataReadsBack is the row of the volumes made before the upgrade whose data reads back in their
// running pods: the app pod's four and the restored one.
func (e *env) dataReadsBack() invariant {
	e.t.Helper()
	row := invariant{what: "volumes made before the upgrade whose data reads back", want: 5}
	out := e.execIn("app", upgradeCheckScript)
	row.got += strings.Count(out, ": OK")
	if strings.Contains(e.execIn("reader", "cd /data && sha256sum -c sum"), "data: OK") {
		row.got++
	}
	return row
}

// execIn runs script in the running pod name of the test's namespace and returns its output.
func (e *env) execIn(name, script string) string {
	e.t.Helper()
	var pod corev1.Pod
	if err := e.c.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: name}, &pod); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx(), execTimeout)
	defer cancel()
	out, err := demo.PodExec(ctx, e.cfg, e.cs, &pod, "main", "/bin/sh", "-c", script)
	e.t.Logf("in pod %s: %s\n%s", name, script, out)
	if err != nil {
		e.t.Logf("exec: %v", err)
	}
	return out
}

// afterUpgrade uses the upgraded product: new claims provision; the old claims grow online to
// 2Gi; the old thin and thick claims are snapshotted and restored. It returns a row for each.
func (e *env) afterUpgrade() []invariant {
	e.t.Helper()
	for _, class := range []string{thinClass, thickClass} {
		name := "fresh-" + strings.TrimPrefix(class, "lvms-")
		e.claim(name, class, "1Gi", false, "")
		e.pod(name, name, false, "", writeScript)
	}
	grown := []string{"thin", "thick", "sealed", "block"}
	for _, name := range grown {
		e.growClaim(name, "2Gi")
	}
	fresh := invariant{what: "new claims (thin, thick) Bound and written", want: 2}
	for _, name := range []string{"fresh-thin", "fresh-thick"} {
		if _, out := e.finished(name); strings.Contains(out, "read=e2e-data") {
			fresh.got++
		}
	}
	expanded := invariant{
		what: "old claims grown online to 2Gi (block: PVC capacity; the others: df in the pod)",
		want: 4,
	}
	for _, name := range grown {
		e.expand(name, "2Gi")
	}
	expanded.got++ // block: expand waited for its capacity
	for _, line := range strings.Split(e.execIn("app", "df -Pk /thin /thick /sealed"), "\n")[1:] {
		f := strings.Fields(line)
		if kib, err := strconv.ParseInt(safeField(f, 1), 10, 64); err == nil && kib > 3<<19 {
			expanded.got++
		}
	}
	restored := invariant{what: "old claims (thin, thick) snapshotted and restored after the upgrade", want: 2}
	for _, class := range []string{thinClass, thickClass} {
		source := strings.TrimPrefix(class, "lvms-")
		e.snapshot("after-"+source, class, source)
		e.claim("again-"+source, class, "2Gi", false, "after-"+source)
		e.pod("again-"+source, "again-"+source, false, "", restoredScript)
	}
	for _, source := range []string{"thin", "thick"} {
		e.podSays("again-"+source, "restored-ok")
		restored.got++
	}
	return []invariant{fresh, expanded, restored}
}

// safeField is f[i], or "" when f is shorter.
func safeField(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

// policyInPlace is the row of the operator's own-node admission policy and its binding: an upgrade
// must not leave the node agents unbounded (an older chart or overlay that carried them itself
// deletes or replaces them). It gives the operator 30 s to put them back.
func (e *env) policyInPlace() invariant {
	e.t.Helper()
	row := invariant{what: "admission policy " + nodePolicyName + " and its binding in place", want: 2}
	ctx, cancel := context.WithTimeout(e.ctx(), 30*time.Second)
	defer cancel()
	for {
		row.got = 0
		for _, obj := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicy{},
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}} {
			if e.c.Get(ctx, client.ObjectKey{Name: nodePolicyName}, obj) == nil && obj.GetDeletionTimestamp() == nil {
				row.got++
			}
		}
		if row.got == row.want || ctx.Err() != nil {
			return row
		}
		time.Sleep(2 * time.Second)
	}
}
