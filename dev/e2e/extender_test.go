//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The scheduler extender as the dev cluster runs it (lvms-dev up --scheduler-extender, which
// hack/e2e.sh passes): the component config/components/scheduler-extender installed with the product,
// the host's kube-scheduler configured with the extender (TopoLVM's verbs and managed resource).
const (
	extenderDaemonSet = "lvms-scheduler"
	extenderResource  = corev1.ResourceName("topolvm.io/capacity")
	// capacityAnnotationThick is the pod webhook's annotation of the thick device class.
	capacityAnnotationThick = "capacity.topolvm.io/thick"
	// webhookOptOut is TopoLVM's namespace label that keeps the pod webhook away; every e2e
	// namespace but the extender test's carries it, so the suite runs the default path
	// (CSIStorageCapacity alone).
	webhookOptOutLabel = "topolvm.io/webhook"
)

// TestSchedulerExtender runs TestCapacityPlacement's scenario with the extender on: the pod webhook
// annotates each pod with its claims' bytes and the managed resource, the real kube-scheduler calls
// `lvms scheduler` for it (its log shows the calls), and a pod whose claim fits only one node lands
// there. TestCapacityPlacement itself runs in a namespace the webhook skips, so the same scenario also
// passes through CSIStorageCapacity alone.
func TestSchedulerExtender(t *testing.T) {
	e := connect(t)
	e.extender = true
	e.ensureLVMCluster()
	e.createNamespace()
	var ds appsv1.DaemonSet
	if err := e.c.Get(e.ctx(), client.ObjectKey{Namespace: operatorNS, Name: extenderDaemonSet}, &ds); err != nil {
		t.Fatalf("the scheduler extender is not installed (hack/e2e.sh runs lvms-dev up --scheduler-extender): %v", err)
	}
	e.waitFor("the extender on every node", func(ctx context.Context) (bool, string, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)
		return err == nil && ds.Status.NumberReady > 0 && ds.Status.NumberReady == ds.Status.DesiredNumberScheduled,
			fmt.Sprintf("%d of %d ready", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled), err
	})

	// Each node has about 16 GiB in the thick VG: one 10 GiB claim fits per node.
	e.claim("big-1", thickClass, "10Gi", false, "")
	e.pod("use-1", "big-1", false, "", "echo ok")
	first, _ := e.finished("use-1")
	checkMutated(t, first, "10Gi")
	e.claim("big-2", thickClass, "10Gi", false, "")
	e.pod("use-2", "big-2", false, "", "echo ok")
	second, _ := e.finished("use-2")
	if first.Spec.NodeName == second.Spec.NodeName {
		t.Fatalf("both 10Gi claims landed on %s, which cannot hold 20Gi", first.Spec.NodeName)
	}
	_, lv := e.volumeOf("big-2")
	if lv.Spec.NodeName != second.Spec.NodeName {
		t.Fatalf("LV of big-2 on %s, its pod on %s", lv.Spec.NodeName, second.Spec.NodeName)
	}
	logs := e.extenderLogs()
	for _, pod := range []string{"use-1", "use-2"} {
		if !strings.Contains(logs, e.ns+"/"+pod) {
			t.Errorf(
				"the extender's log does not mention pod %s/%s: kube-scheduler did not call it\n%s",
				e.ns,
				pod,
				logs,
			)
		}
	}
	t.Logf("extender log lines about the test's pods:\n%s", linesMatching(logs, regexp.QuoteMeta(e.ns+"/")))
}

// checkMutated checks that the pod webhook gave pod the annotation of the thick class (the claim's
// bytes) and the managed resource that makes kube-scheduler call the extender.
func checkMutated(t *testing.T, pod *corev1.Pod, size string) {
	t.Helper()
	want := resource.MustParse(size)
	if got := pod.Annotations[capacityAnnotationThick]; got != fmt.Sprint(want.Value()) {
		t.Errorf("pod %s: annotation %s = %q, want %d", pod.Name, capacityAnnotationThick, got, want.Value())
	}
	if _, ok := pod.Spec.Containers[0].Resources.Requests[extenderResource]; !ok {
		t.Errorf(
			"pod %s: no request of %s in %v",
			pod.Name,
			extenderResource,
			pod.Spec.Containers[0].Resources.Requests,
		)
	}
}

// extenderLogs returns the logs of every extender pod.
func (e *env) extenderLogs() string {
	e.t.Helper()
	logs, err := e.podLogs(extenderDaemonSet, "")
	if err != nil {
		e.t.Fatal(err)
	}
	return logs
}

// podLogs returns the logs of every pod of the operator namespace labelled app.kubernetes.io/name=name
// (of its container named container, or its only one when container is empty).
func (e *env) podLogs(name, container string) (string, error) {
	var pods corev1.PodList
	if err := e.c.List(e.ctx(), &pods, client.InNamespace(operatorNS),
		client.MatchingLabels{"app.kubernetes.io/name": name}); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range pods.Items {
		raw, err := e.cs.CoreV1().Pods(operatorNS).GetLogs(p.Name, &corev1.PodLogOptions{Container: container}).
			DoRaw(e.ctx())
		if err != nil {
			return "", fmt.Errorf("logs of %s: %w", p.Name, err)
		}
		b.Write(raw)
	}
	return b.String(), nil
}
