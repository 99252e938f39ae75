package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// CapacityWatcher streams lvmd's capacities; *lvmd.Service implements it.
type CapacityWatcher interface {
	// Watch returns a channel receiving the capacities of all device classes at once and after each
	// change, closed when ctx ends.
	Watch(ctx context.Context) <-chan []lvmd.Capacity
}

// Default retry bounds of CapacityAnnotator after a failed Node patch.
const (
	DefaultRetryInitial = time.Second
	DefaultRetryLimit   = time.Minute
)

// CapacityAnnotatorOptions configure a CapacityAnnotator.
type CapacityAnnotatorOptions struct {
	// Client patches the Node; required.
	Client client.Client
	// Reader reads the Node to find stale annotations (once, and after failures). Default Client;
	// pass the manager's API reader so the agent does not cache every Node of the cluster.
	Reader client.Reader
	// NodeName is this node; required.
	NodeName string
	// Capacities is lvmd; required.
	Capacities CapacityWatcher
	// RetryInitial and RetryLimit bound the backoff after a failed patch (defaults DefaultRetryInitial and
	// DefaultRetryLimit).
	RetryInitial, RetryLimit time.Duration
}

// CapacityAnnotator keeps the Node's capacity annotations equal to lvmd's free bytes: one
// capacity.topolvm.io/<device-class> per class, plus capacity.topolvm.io/00default for the default
// class, each the class's free bytes as a decimal string. Annotations of classes that no longer exist
// are removed; other annotations are left alone. It is a manager Runnable.
type CapacityAnnotator struct {
	client       client.Client
	reader       client.Reader
	node         string
	src          CapacityWatcher
	retryInitial time.Duration
	retryLimit   time.Duration
	written      map[string]string // our annotations on the Node as last written; nil = unknown
	retryAfter   time.Duration
}

// NewCapacityAnnotator returns a CapacityAnnotator.
func NewCapacityAnnotator(o CapacityAnnotatorOptions) (*CapacityAnnotator, error) {
	if o.Client == nil || o.NodeName == "" || o.Capacities == nil {
		return nil, errors.New("capacity annotator: Client, NodeName and Capacities are required")
	}
	if o.Reader == nil {
		o.Reader = o.Client
	}
	if o.RetryInitial <= 0 {
		o.RetryInitial = DefaultRetryInitial
	}
	if o.RetryLimit < o.RetryInitial {
		o.RetryLimit = max(DefaultRetryLimit, o.RetryInitial)
	}
	return &CapacityAnnotator{client: o.Client, reader: o.Reader, node: o.NodeName, src: o.Capacities,
		retryInitial: o.RetryInitial, retryLimit: o.RetryLimit}, nil
}

// NeedLeaderElection is false: every node agent annotates its own Node.
func (a *CapacityAnnotator) NeedLeaderElection() bool { return false }

// Start writes the annotations for each capacity update until ctx ends. A failed write is retried
// with backoff (the Node may not be reachable yet); it is logged, not returned, so the agent keeps
// running.
func (a *CapacityAnnotator) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithValues("node", a.node)
	updates := a.src.Watch(ctx)
	var want map[string]string
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case caps, ok := <-updates:
			if !ok {
				return nil
			}
			want = CapacityAnnotations(caps)
		case <-retry:
		}
		retry = nil
		if err := a.sync(ctx, want); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			a.retryAfter = min(max(2*a.retryAfter, a.retryInitial), a.retryLimit)
			log.Error(err, "Updating capacity annotations failed", "retryAfter", a.retryAfter)
			retry = time.After(a.retryAfter)
			continue
		}
		a.retryAfter = 0
	}
}

// CapacityAnnotations returns the Node annotations for caps.
func CapacityAnnotations(caps []lvmd.Capacity) map[string]string {
	out := make(map[string]string, len(caps)+1)
	for _, c := range caps {
		v := driver.FormatBytes(c.FreeBytes)
		out[driver.CapacityAnnotation(c.DeviceClass)] = v
		if c.Default {
			out[driver.CapacityAnnotation("")] = v
		}
	}
	return out
}

// sync patches the Node so that its capacity annotations are want.
func (a *CapacityAnnotator) sync(ctx context.Context, want map[string]string) error {
	if a.written == nil {
		node := &corev1.Node{}
		if err := a.reader.Get(ctx, types.NamespacedName{Name: a.node}, node); err != nil {
			return fmt.Errorf("get node %s: %w", a.node, err)
		}
		a.written = map[string]string{}
		for k, v := range node.Annotations {
			if strings.HasPrefix(k, driver.CapacityAnnotationPrefix) {
				a.written[k] = v
			}
		}
	}
	changes := map[string]any{}
	for k, v := range want {
		if old, ok := a.written[k]; !ok || old != v {
			changes[k] = v
		}
	}
	for k := range a.written {
		if _, ok := want[k]; !ok {
			changes[k] = nil // removes the key (JSON merge patch)
		}
	}
	if len(changes) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": changes}})
	if err != nil {
		return fmt.Errorf("encode annotation patch: %w", err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: a.node}}
	if err := a.client.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch)); err != nil {
		a.written = nil // read the Node again before the next attempt
		return fmt.Errorf("patch capacity annotations of node %s: %w", a.node, err)
	}
	a.written = maps.Clone(want)
	return nil
}
