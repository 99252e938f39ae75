package devcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// waitNodes waits until every guest's Node is Ready (its node agent only runs once an LVMCluster
// exists), failing early with the guest's logs when a guest ends.
func (c *cluster) waitNodes(ctx context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.l.Kubeconfig())
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, nodesTimeout)
	defer cancel()
	for {
		missing := c.nodesNotReady(ctx, cs)
		if len(missing) == 0 {
			return nil
		}
		for _, g := range c.guests {
			select {
			case <-g.done:
				return c.guestFailure(g, fmt.Errorf("guest ended while waiting for %s", strings.Join(missing, ", ")))
			default:
			}
		}
		select {
		case <-ctx.Done():
			g := c.guests[0]
			for _, cand := range c.guests {
				if slices.ContainsFunc(missing, func(m string) bool { return strings.HasPrefix(m, cand.name+" ") }) {
					g = cand
					break
				}
			}
			return c.guestFailure(g, fmt.Errorf("not ready after %s: %s (kubelet log %s)", nodesTimeout,
				strings.Join(missing, ", "), c.l.Log(g.prefix+"-kubelet")))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// nodesNotReady describes what is still missing, e.g. "node-0 not Ready".
func (c *cluster) nodesNotReady(ctx context.Context, cs kubernetes.Interface) []string {
	var missing []string
	for _, g := range c.guests {
		n, err := cs.CoreV1().Nodes().Get(ctx, g.name, metav1.GetOptions{})
		if err != nil || !nodeReady(n) {
			missing = append(missing, g.name+" not Ready")
		}
	}
	return missing
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
