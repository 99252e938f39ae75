//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
)

// execTimeout bounds one command run in a node agent's container.
const execTimeout = 2 * time.Minute

// onAgent runs script on node with `kubectl exec` in the node agent's container: nsenter into
// the node's mount namespace (PID 1's; the agent runs with hostPID, as its own lvm2 commands do)
// and /bin/sh -c there. It is how an admin looks at a node, and it costs a few seconds where a
// pod of its own costs half a minute of the single-CPU guest (sandbox, CNI, shim and teardown).
// Checks after the LVMCluster is gone, when there is no agent, use onNode.
func (e *env) onAgent(node, script string) string {
	e.t.Helper()
	var pods corev1.PodList
	if err := e.c.List(e.ctx(), &pods, client.InNamespace(operatorNS),
		client.MatchingLabels{"app.kubernetes.io/name": lvmcluster.NodeDaemonSetName},
		client.MatchingFields{"spec.nodeName": node}); err != nil {
		e.t.Fatalf("list node agent pods on %s: %v", node, err)
	}
	var agent *corev1.Pod
	for i := range pods.Items {
		if pods.Items[i].Status.Phase == corev1.PodRunning && pods.Items[i].DeletionTimestamp == nil {
			agent = &pods.Items[i]
		}
	}
	if agent == nil {
		e.t.Fatalf("no running node agent pod on %s (%d found)", node, len(pods.Items))
	}
	out, err := e.exec(agent, "nsenter", "--target=1", "--mount", "--", "/bin/sh", "-c", script)
	if err != nil {
		e.t.Fatalf("exec in %s on %s: %v\n%s", agent.Name, node, err, out)
	}
	return out
}

// exec runs command in the first container of pod through the pods/exec API and returns its
// output (stdout, then stderr).
func (e *env) exec(pod *corev1.Pod, command ...string) (string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", e.kubeconfig)
	if err != nil {
		return "", fmt.Errorf("kubeconfig: %w", err)
	}
	req := e.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: pod.Spec.Containers[0].Name, Command: command, Stdout: true, Stderr: true,
	}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return "", fmt.Errorf("exec: %w", err)
	}
	ctx, cancel := context.WithTimeout(e.ctx(), execTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String() + stderr.String(), err
}
