package simnode

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/nodeagent"
)

// KwokAnnotation marks the Nodes kwok keeps Ready (kwok --manage-nodes-with-annotation-selector).
const KwokAnnotation = "kwok.x-k8s.io/node"

// AddNode creates Node name (kwok keeps it Ready) and starts its agent: the agent then reconciles
// every LVMVolumeGroup, as a real agent does when its caches first sync, and the node's CSINode is
// written when the agent would register with the kubelet (Options.RegisterAtOnce).
func (f *Fleet) AddNode(ctx context.Context, name string) error {
	select {
	case <-f.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	c := f.mgr.GetClient()
	nodeObj := nodeObject(name)
	// Create fills nodeObj in (its UID for the CSINode's owner); an existing Node is read past the
	// cache, which may not hold it yet.
	if err := c.Create(ctx, nodeObj); apierrors.IsAlreadyExists(err) {
		err = f.mgr.GetAPIReader().Get(ctx, client.ObjectKey{Name: name}, nodeObj)
		if err != nil {
			return fmt.Errorf("get Node %s: %w", name, err)
		}
	} else if err != nil {
		return fmt.Errorf("create Node %s: %w", name, err)
	}
	if f.o.RegisterAtOnce {
		if err := createCSINode(ctx, c, nodeObj); err != nil {
			return err
		}
	}
	n, err := f.newNode(name)
	if err != nil {
		return err
	}
	f.mu.Lock()
	if _, dup := f.nodes[name]; dup {
		f.mu.Unlock()
		return fmt.Errorf("node %s is already simulated", name)
	}
	f.nodes[name] = n
	f.mu.Unlock()
	n.run(f.ctx)
	if !f.o.RegisterAtOnce {
		go f.register(n, nodeObj)
	}
	var vgs lvmv1alpha1.LVMVolumeGroupList
	if err := c.List(ctx, &vgs, client.InNamespace(f.o.Namespace)); err != nil {
		return fmt.Errorf("list LVMVolumeGroups: %w", err)
	}
	for _, vg := range vgs.Items {
		f.vgq.Add(key{node: name, name: vg.Name})
	}
	return nil
}

// register writes the CSINode of node n once its agent would register with the kubelet: when the
// Node carries the capacity of each of its device classes, or after nodeagent.DefaultRegistrationWait.
func (f *Fleet) register(n *node, nodeObj *corev1.Node) {
	ctx := ctrl.LoggerInto(f.ctx, ctrl.Log.WithName("simnode").WithValues("node", n.name))
	ready := nodeagent.CapacityPublished(f.mgr.GetClient(), n.name, n.vgm.Classes)
	if !nodeagent.WaitToRegister(ctx, ready, nodeagent.DefaultRegistrationWait) {
		return
	}
	if err := createCSINode(ctx, f.mgr.GetClient(), nodeObj); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Registering the simulated node failed")
	}
}

// createCSINode writes the CSINode the kubelet writes once the driver registered on nodeObj.
func createCSINode(ctx context.Context, c client.Client, nodeObj *corev1.Node) error {
	if err := c.Create(ctx, csiNode(nodeObj)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CSINode %s: %w", nodeObj.Name, err)
	}
	return nil
}

// nodeObject is a Node as a kubelet would register it, labelled with the driver's topology (the
// kubelet adds it from NodeGetInfo) and annotated for kwok.
func nodeObject(name string) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
				"type": "kwok", driver.TopologyNodeKey: name,
			},
			Annotations: map[string]string{KwokAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res, Images: nodeImages(),
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          "v1.37.0",
				OperatingSystem:         "linux",
				Architecture:            "amd64",
				ContainerRuntimeVersion: "containerd://2.2.0",
				KernelVersion:           "6.12.0",
				OSImage:                 "Debian GNU/Linux 13",
			}},
	}
}

// nodeImages is what a kubelet reports of its images: up to 50 (its nodeStatusMaxImages), each
// with its digest and tag names, so that the Nodes the operator caches are the size of real ones
// (about 10 KiB) rather than of bare objects.
func nodeImages() []corev1.ContainerImage {
	out := make([]corev1.ContainerImage, 50)
	for i := range out {
		repo := fmt.Sprintf("registry.example.com/team-%02d/service-%02d", i%7, i)
		out[i] = corev1.ContainerImage{
			Names: []string{
				fmt.Sprintf("%s@sha256:%064x", repo, i*7919+1),
				fmt.Sprintf("%s:v1.%d.%d", repo, i, i*3),
			},
			SizeBytes: int64(20+i*3) << 20,
		}
	}
	return out
}

// csiNode is the CSINode the kubelet writes once the driver registered on node.
func csiNode(node *corev1.Node) *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name: node.Name,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
			Name: driver.Name, NodeID: node.Name, TopologyKeys: []string{driver.TopologyNodeKey},
		}}},
	}
}
