package snapmeta

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

// IndexVolumeID is the cache field index of LogicalVolumes by status.volumeID (a snapshot's CSI ID).
const IndexVolumeID = "status.volumeID"

// IndexVolumeIDFunc is the index function of IndexVolumeID.
func IndexVolumeIDFunc(obj client.Object) []string {
	lv, ok := obj.(*topolvmv1.LogicalVolume)
	if !ok || lv.Status.VolumeID == "" {
		return nil
	}
	return []string{lv.Status.VolumeID}
}

// KubeLocator locates snapshots through the API: the LogicalVolume whose status.volumeID is the
// snapshot ID names the node, and the node agent Pod on that node gives the address (its pod IP and
// Port). Client reads from a cache with IndexVolumeID on LogicalVolumes and the agent Pods of
// Namespace.
type KubeLocator struct {
	Client    client.Reader
	Namespace string
	// PodLabels select the node agent Pods.
	PodLabels map[string]string
	Port      int
}

// Locate returns the node of snapshot id and the address of its agent's endpoint.
func (l *KubeLocator) Locate(ctx context.Context, id string) (string, string, error) {
	var lvs topolvmv1.LogicalVolumeList
	if err := l.Client.List(ctx, &lvs, client.MatchingFields{IndexVolumeID: id}); err != nil {
		return "", "", status.Errorf(codes.Internal, "list LogicalVolumes with ID %s: %v", id, err)
	}
	switch len(lvs.Items) {
	case 0:
		return "", "", status.Errorf(codes.NotFound, "snapshot %s: no LogicalVolume carries this ID", id)
	case 1:
	default:
		return "", "", status.Errorf(codes.Internal, "snapshot %s: %d LogicalVolumes carry this ID", id, len(lvs.Items))
	}
	node := lvs.Items[0].Spec.NodeName
	addr, err := AgentAddress(ctx, l.Client, l.Namespace, l.PodLabels, node, l.Port)
	if err != nil {
		return "", "", status.Errorf(codes.Internal, "%v", err)
	}
	if addr != "" {
		return node, addr, nil
	}
	return "", "", status.Error(
		codes.Unavailable,
		fmt.Sprintf("snapshot %s is on node %s, where no node agent runs", id, node),
	)
}

// AgentAddress is host:port of the node agent Pod on node (a running Pod of namespace with labels,
// by its pod IP), "" while none runs there.
func AgentAddress(ctx context.Context, c client.Reader, namespace string, labels map[string]string, node string,
	port int,
) (string, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels(labels)); err != nil {
		return "", fmt.Errorf("list node agent pods: %w", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" &&
			p.DeletionTimestamp.IsZero() {
			return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)), nil
		}
	}
	return "", nil
}
