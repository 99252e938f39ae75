package demo

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
)

// AgentExec runs script on node as an admin would look at a node: `kubectl exec` (the pods/exec
// API) into the container of the node agent pod on that node (in namespace ns), entering the
// node's mount namespace (`nsenter --target=1 --mount -- /bin/sh -c script`; the agent runs with
// hostPID). It returns stdout followed by stderr. It costs a UML node a few seconds where a pod of
// its own costs about half a minute (sandbox, CNI, shim, teardown). The demo and the e2e suite
// use it for lvs and vgs on a node.
func AgentExec(
	ctx context.Context,
	cfg *rest.Config,
	c client.Client,
	cs kubernetes.Interface,
	ns, node, script string,
) (string, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns),
		client.MatchingLabels{"app.kubernetes.io/name": lvmcluster.NodeDaemonSetName},
		client.MatchingFields{"spec.nodeName": node}); err != nil {
		return "", fmt.Errorf("list node agent pods on %s: %w", node, err)
	}
	var agent *corev1.Pod
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			agent = p
		}
	}
	if agent == nil {
		return "", fmt.Errorf("no running node agent pod on %s (%d found)", node, len(pods.Items))
	}
	return PodExec(ctx, cfg, cs, agent, agent.Spec.Containers[0].Name,
		"nsenter", "--target=1", "--mount", "--", "/bin/sh", "-c", script)
}

// PodExec runs command in container of pod through the pods/exec API (kubectl exec) and returns
// stdout followed by stderr.
func PodExec(
	ctx context.Context,
	cfg *rest.Config,
	cs kubernetes.Interface,
	pod *corev1.Pod,
	container string,
	command ...string,
) (string, error) {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: container, Stdout: true, Stderr: true, Command: command,
	}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return "", fmt.Errorf("exec in %s: %w", pod.Name, err)
	}
	var stdout, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	out := stdout.String() + stderr.String()
	if err != nil {
		return out, fmt.Errorf("exec in %s on %s: %w", pod.Name, pod.Spec.NodeName, err)
	}
	return out, nil
}
