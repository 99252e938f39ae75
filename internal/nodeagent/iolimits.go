package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/controller/logicalvolume"
	"github.com/lvm-operator/lvm-operator/internal/iolimit"
)

// IOLimiter puts the IO caps of this node's LogicalVolumes (spec.ioLimits, from a
// VolumeAttributesClass) in force with cgroup v2 io.max: for every pod using a volume when the caps
// change (logicalvolume.IOLimiter), and for the pod of each new publish (the CSI node service's
// csinode.PublishLimiter) before the pod's containers start.
type IOLimiter struct {
	// mu makes a publish's read of the caps and its write of them one step towards a reconcile's
	// scan and write. Without it, a publish that read the previous caps from the cache could write
	// them after the reconcile of the new caps had found and capped its pod: the pod would keep the
	// previous caps until the volume's next reconcile. With it, either the publish comes first (and
	// the reconcile, which starts after the cache has the new caps, finds the pod mounted) or the
	// publish reads the new caps.
	mu       sync.Mutex
	host     *iolimit.Host
	reader   client.Reader
	nodeName string
}

var _ logicalvolume.IOLimiter = (*IOLimiter)(nil)

// NewIOLimiter returns the limiter of node's volumes; reader (the agent's cache) finds a volume's
// LogicalVolume at publish.
func NewIOLimiter(host *iolimit.Host, reader client.Reader, node string) *IOLimiter {
	return &IOLimiter{host: host, reader: reader, nodeName: node}
}

// Limit implements logicalvolume.IOLimiter. A pod whose cgroup is gone has ended (the kubelet makes
// the pod's cgroup before it mounts the pod's volumes and removes it after the containers stopped):
// it is skipped.
func (l *IOLimiter) Limit(ctx context.Context, volume string, limits *topolvmv1.IOLimits) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	uses, err := l.host.Uses(volume)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, u := range uses {
		err := l.host.Apply(u, limitsOf(limits))
		if errors.Is(err, iolimit.ErrNoCgroup) {
			ctrl.LoggerFrom(ctx).Info("Not capping the IO of an ended pod", "pod", u.PodUID, "target", u.Target)
			continue
		}
		if err != nil {
			return n, fmt.Errorf("pod %s: %w", u.PodUID, err)
		}
		n++
	}
	return n, nil
}

// LimitPublished sets the caps of volume id, if it has any, in the cgroup of the pod of the publish
// at target.
func (l *IOLimiter) LimitPublished(ctx context.Context, id, target string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	lv, err := l.logicalVolume(ctx, id)
	if err != nil || lv == nil || lv.Spec.IOLimits == nil {
		return err
	}
	u, err := l.host.UseOf(target)
	if err != nil {
		return err
	}
	if err := l.host.Apply(u, limitsOf(lv.Spec.IOLimits)); err != nil {
		return fmt.Errorf("cap the IO of pod %s: %w", u.PodUID, err)
	}
	ctrl.LoggerFrom(ctx).Info("Applied IO limits to a new publish", "volume", id, "pod", u.PodUID,
		"device", u.Device.String(), "ioLimits", lv.Spec.IOLimits)
	return nil
}

// logicalVolume finds this node's LogicalVolume of volume ID id (nil: none).
func (l *IOLimiter) logicalVolume(ctx context.Context, id string) (*topolvmv1.LogicalVolume, error) {
	list := &topolvmv1.LogicalVolumeList{}
	// Read only: no deep copy of each of the node's LogicalVolumes on every publish.
	if err := l.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list LogicalVolumes: %w", err)
	}
	for i := range list.Items {
		lv := &list.Items[i]
		if lv.Spec.NodeName == l.nodeName && logicalvolume.LVName(lv) == id {
			return lv, nil
		}
	}
	return nil, nil
}

func limitsOf(l *topolvmv1.IOLimits) iolimit.Limits {
	if l == nil {
		return iolimit.Limits{}
	}
	return iolimit.Limits{
		ReadBPS: uint64(l.ReadBytesPerSecond), WriteBPS: uint64(l.WriteBytesPerSecond),
		ReadIOPS: uint64(l.ReadIOPS), WriteIOPS: uint64(l.WriteIOPS),
	}
}
