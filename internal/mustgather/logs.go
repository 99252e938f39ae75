package mustgather

import (
	"context"
	"fmt"
	"io"
	"path"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// logs writes the log of every container that ran in a pod of the operator's namespace (the operator,
// the node agents, the scheduler extender, their sidecars), and the log of its last run when it
// restarted: logs/POD/CONTAINER.log and CONTAINER.previous.log.
func (g *Gatherer) logs(ctx context.Context, a *archive) error {
	var pods corev1.PodList
	if err := g.c.List(ctx, &pods, client.InNamespace(g.o.OperatorNamespace)); err != nil {
		a.failed("logs: not collected: list pods in %s: %v", g.o.OperatorNamespace, err)
		return nil
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		statuses := append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...),
			pod.Status.ContainerStatuses...)
		for _, st := range statuses {
			if err := g.log(ctx, a, pod, st.Name, false); err != nil {
				return err
			}
			if st.RestartCount > 0 {
				if err := g.log(ctx, a, pod, st.Name, true); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// log writes one container's log (its previous run's when previous), at most LogLimitBytes of its end
// within Since.
func (g *Gatherer) log(ctx context.Context, a *archive, pod *corev1.Pod, container string, previous bool) error {
	name := path.Join("logs", pod.Name, container+".log")
	if previous {
		name = path.Join("logs", pod.Name, container+".previous.log")
	}
	limit := g.o.LogLimitBytes
	opts := &corev1.PodLogOptions{Container: container, Previous: previous, Timestamps: true, LimitBytes: &limit}
	if g.o.Since > 0 {
		since := int64(g.o.Since.Seconds())
		opts.SinceSeconds = &since
	}
	rc, err := g.cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, opts).Stream(ctx)
	if err != nil {
		a.failed("%s: not collected: %v", name, err)
		return nil
	}
	defer func() { _ = rc.Close() }()
	body, err := io.ReadAll(io.LimitReader(rc, limit))
	if err != nil {
		a.failed("%s: cut short after %d bytes: %v", name, len(body), err)
	}
	if err := a.add(name, body); err != nil {
		return fmt.Errorf("logs: %w", err)
	}
	return nil
}
