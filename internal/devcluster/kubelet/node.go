package kubelet

import (
	"context"
	"fmt"
	"maps"
	"runtime"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
)

const (
	// NodeLeaseNamespace holds the node heartbeat Leases.
	NodeLeaseNamespace = "kube-node-lease"
	// leaseDurationSeconds is the kubelet's default node lease duration.
	leaseDurationSeconds = 40
	// KubeletVersion is reported in the Node's nodeInfo.
	KubeletVersion = "v1.37.0-lvms-dev"
	// loopbackIP is the node and pod address: a dev-cluster node only has lo.
	loopbackIP = "127.0.0.1"
)

// nodeLabels are the labels the Node carries.
func (k *Kubelet) nodeLabels() map[string]string {
	l := map[string]string{
		corev1.LabelHostname:   k.cfg.NodeName,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: runtime.GOARCH,
		lvmcsi.TopologyNodeKey: k.cfg.NodeName,
	}
	maps.Copy(l, k.cfg.Labels)
	return l
}

// RegisterNode creates the Node or adds the labels to an existing one, then reports its status.
func (k *Kubelet) RegisterNode(ctx context.Context) error {
	nodes := k.client.CoreV1().Nodes()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Labels: k.nodeLabels()}}
	_, err := nodes.Create(ctx, node, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := nodes.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cur.Labels == nil {
				cur.Labels = map[string]string{}
			}
			maps.Copy(cur.Labels, k.nodeLabels())
			_, err = nodes.Update(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager})
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("create or update node: %w", err)
	}
	return k.UpdateNodeStatus(ctx)
}

// UpdateNodeStatus reports the node Ready with fresh heartbeats, its capacity, addresses and info.
func (k *Kubelet) UpdateNodeStatus(ctx context.Context) error {
	nodes := k.client.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		k.setNodeStatus(&cur.Status, metav1.NewTime(k.clock.Now()))
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("update node status: %w", err)
	}
	return nil
}

// setNodeStatus writes what the node reports into st, keeping transition times of unchanged conditions.
func (k *Kubelet) setNodeStatus(st *corev1.NodeStatus, now metav1.Time) {
	st.Capacity = k.cfg.Capacity.DeepCopy()
	st.Allocatable = k.cfg.Capacity.DeepCopy()
	st.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: loopbackIP},
		{Type: corev1.NodeHostName, Address: k.cfg.NodeName},
	}
	st.NodeInfo.KubeletVersion = KubeletVersion
	st.NodeInfo.OperatingSystem = "linux"
	st.NodeInfo.Architecture = runtime.GOARCH
	st.NodeInfo.ContainerRuntimeVersion = "lvms-dev-kubelet://processes"
	want := []struct {
		t              corev1.NodeConditionType
		s              corev1.ConditionStatus
		reason, msgFmt string
	}{
		{corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "lvms-dev dev-kubelet is posting ready status"},
		{corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "no memory pressure"},
		{corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "no disk pressure"},
		{corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "no PID pressure"},
	}
	conds := make([]corev1.NodeCondition, 0, len(want))
	for _, w := range want {
		c := corev1.NodeCondition{Type: w.t, Status: w.s, Reason: w.reason, Message: w.msgFmt,
			LastHeartbeatTime: now, LastTransitionTime: now}
		for _, old := range st.Conditions {
			if old.Type == w.t && old.Status == w.s {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		conds = append(conds, c)
	}
	st.Conditions = conds
}

// RenewLease creates or renews the node's Lease in kube-node-lease, owned by the Node.
func (k *Kubelet) RenewLease(ctx context.Context) error {
	leases := k.client.CoordinationV1().Leases(NodeLeaseNamespace)
	now := metav1.NewMicroTime(k.clock.Now())
	cur, err := leases.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get node for lease owner: %w", err)
		}
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Namespace: NodeLeaseNamespace,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(k.cfg.NodeName),
				LeaseDurationSeconds: ptr.To[int32](leaseDurationSeconds), RenewTime: &now},
		}
		if _, err := leases.Create(ctx, lease, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("create lease: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get lease: %w", err)
	}
	cur.Spec.HolderIdentity = ptr.To(k.cfg.NodeName)
	cur.Spec.LeaseDurationSeconds = ptr.To[int32](leaseDurationSeconds)
	cur.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	return nil
}

// heartbeatLoop renews the Lease and the node status every Heartbeat until ctx ends. Failures are
// logged and retried at the next tick: a missed heartbeat is what the node lifecycle controller judges.
func (k *Kubelet) heartbeatLoop(ctx context.Context) {
	log := ctrl.LoggerFrom(ctx)
	t := k.clock.NewTicker(k.cfg.Heartbeat)
	defer t.Stop()
	for {
		if err := k.RenewLease(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Lease renewal failed")
		}
		if err := k.UpdateNodeStatus(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Node status update failed")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}
