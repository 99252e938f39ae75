package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
)

// NodeIDAnnotation is the Node annotation in which kubelet records each driver's node ID.
const NodeIDAnnotation = "csi.volume.kubernetes.io/nodeid"

// DialCSI returns a client connection to the CSI socket at path. The connection is lazy and
// reconnects by itself when the node agent restarts; calls fail with Unavailable meanwhile.
func DialCSI(path string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial CSI socket %s: %w", path, err)
	}
	return conn, nil
}

// WriteCSINode asks the node service for its node ID and topology and records them as kubelet's
// plugin registration does: the driver entry of the CSINode (owned by the Node), the Node's nodeid
// annotation and topology labels.
func (k *Kubelet) WriteCSINode(ctx context.Context) error {
	info, err := k.csi.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		return fmt.Errorf("NodeGetInfo: %w", err)
	}
	if info.GetNodeId() == "" {
		return fmt.Errorf("NodeGetInfo returned an empty node ID")
	}
	topology := info.GetAccessibleTopology().GetSegments()
	node, err := k.updateNodeForDriver(ctx, info.GetNodeId(), topology)
	if err != nil {
		return err
	}
	driver := storagev1.CSINodeDriver{Name: lvmcsi.DriverName, NodeID: info.GetNodeId(),
		TopologyKeys: slicesSortedKeys(topology)}
	if n := info.GetMaxVolumesPerNode(); n > 0 {
		driver.Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To(int32(n))}
	}
	csiNodes := k.client.StorageV1().CSINodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := csiNodes.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cn := &storagev1.CSINode{
				ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, OwnerReferences: []metav1.OwnerReference{
					{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}},
				Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{driver}},
			}
			if _, err := csiNodes.Create(ctx, cn, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
				return fmt.Errorf("create CSINode: %w", err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("get CSINode: %w", err)
		}
		drivers := []storagev1.CSINodeDriver{driver}
		for _, d := range cur.Spec.Drivers {
			if d.Name != lvmcsi.DriverName {
				drivers = append(drivers, d)
			}
		}
		cur.Spec.Drivers = drivers
		if _, err := csiNodes.Update(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("update CSINode: %w", err)
		}
		return nil
	})
}

// updateNodeForDriver adds the driver's node ID annotation and topology labels to the Node.
func (k *Kubelet) updateNodeForDriver(ctx context.Context, nodeID string, topology map[string]string) (*corev1.Node, error) {
	nodes := k.client.CoreV1().Nodes()
	var out *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ids := map[string]string{}
		if raw := cur.Annotations[NodeIDAnnotation]; raw != "" {
			_ = json.Unmarshal([]byte(raw), &ids) // a malformed value is replaced
		}
		ids[lvmcsi.DriverName] = nodeID
		raw, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[NodeIDAnnotation] = string(raw)
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		maps.Copy(cur.Labels, topology)
		out, err = nodes.Update(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record driver %s on node: %w", lvmcsi.DriverName, err)
	}
	return out, nil
}
