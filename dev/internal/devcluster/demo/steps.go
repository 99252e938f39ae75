package demo

import (
	"context"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster"
)

// greeting is what the writer pod stores in the volume and the clone's reader must find.
const greeting = "hello from the lvms demo"

// writerScript writes the file, prints it, then prints the mount's df line whenever it changes.
const writerScript = `set -e
echo "` + greeting + `" > ` + demoFile + `
sync
echo "wrote: $(cat ` + demoFile + `)"
prev=
while true; do
  cur=$(df -Pk ` + mountPath + ` | tail -n 1)
  if [ "$cur" != "$prev" ]; then echo "df: $cur"; prev=$cur; fi
  sleep 1
done`

// lvsScript lists the LVs of the demo's volume group on the node.
const lvsScript = "lvs --units m -o lv_name,lv_size,pool_lv,origin,lv_attr vg1"

// lvmCluster creates the sample LVMCluster in the operator namespace and waits until it is Ready.
func (d *demo) lvmCluster(ctx context.Context) error {
	b, err := os.ReadFile(d.o.Sample)
	if err != nil {
		return fmt.Errorf("read the sample LVMCluster: %w", err)
	}
	var want lvmv1alpha1.LVMCluster
	if err := yaml.UnmarshalStrict(b, &want); err != nil {
		return fmt.Errorf("decode %s: %w", d.o.Sample, err)
	}
	want.Namespace = devcluster.Namespace
	var got lvmv1alpha1.LVMCluster
	key := client.ObjectKeyFromObject(&want)
	switch err := d.k.c.Get(ctx, key, &got); {
	case err == nil:
		fmt.Fprintf(d.out, "LVMCluster %s exists already: using it\n", key)
	case client.IgnoreNotFound(err) == nil:
		if err := d.k.c.Create(ctx, &want); err != nil {
			return fmt.Errorf("create LVMCluster %s: %w", key, err)
		}
		fmt.Fprintf(d.out, "created LVMCluster %s from %s\n", key, d.o.Sample)
	default:
		return fmt.Errorf("get LVMCluster %s: %w", key, err)
	}
	err = d.k.waitFor(ctx, "LVMCluster "+key.String()+" state Ready", func(ctx context.Context) (bool, string, error) {
		if err := d.k.c.Get(ctx, key, &got); err != nil {
			return false, "", fmt.Errorf("get LVMCluster %s: %w", key, err)
		}
		return got.Status.State == lvmv1alpha1.LVMStatusReady, fmt.Sprintf(
			"state %q %s",
			got.Status.State,
			vgSummary(&got),
		), nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "LVMCluster state %s: %s\n", got.Status.State, vgSummary(&got))
	return d.waitCapacity(ctx)
}

// waitCapacity waits until every Ready node has a CSIStorageCapacity above zero for the demo's
// class: before that the scheduler finds no node with enough free storage and parks the pod.
func (d *demo) waitCapacity(ctx context.Context) error {
	nodes, err := d.k.readyNodes(ctx)
	if err != nil {
		return err
	}
	err = d.k.waitFor(
		ctx,
		"CSIStorageCapacity of "+storageClass+" on every node",
		func(ctx context.Context) (bool, string, error) {
			var list storagev1.CSIStorageCapacityList
			if err := d.k.c.List(ctx, &list); err != nil {
				return false, "", fmt.Errorf("list CSIStorageCapacity: %w", err)
			}
			var seen []string
			for _, c := range list.Items {
				if c.StorageClassName == storageClass && c.Capacity != nil && !c.Capacity.IsZero() {
					seen = append(seen, c.Name+"="+c.Capacity.String())
				}
			}
			return len(seen) >= len(nodes), "capacity " + strings.Join(seen, ", "), nil
		},
	)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "storage capacity of %s published for %d node(s)\n", storageClass, len(nodes))
	return nil
}

// vgSummary lists each node's volume group status and devices.
func vgSummary(c *lvmv1alpha1.LVMCluster) string {
	var parts []string
	for _, dc := range c.Status.DeviceClassStatuses {
		for _, n := range dc.NodeStatus {
			s := fmt.Sprintf("%s/%s %s %v", n.Node, n.Name, n.Status, n.Devices)
			if n.Reason != "" {
				s += " (" + n.Reason + ")"
			}
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return "no node status yet"
	}
	return strings.Join(parts, "; ")
}

// provision creates the claim and the writer pod and shows where and how the volume came to be.
func (d *demo) provision(ctx context.Context) error {
	if err := d.deleteDemoObjects(ctx); err != nil {
		return fmt.Errorf("remove objects of an earlier run: %w", err)
	}
	if err := d.k.createClaim(ctx, claimName, "1Gi", nil); err != nil {
		return err
	}
	if err := d.k.createPod(
		ctx,
		podSpec{name: podName, script: writerScript, claim: claimName, restart: corev1.RestartPolicyNever},
	); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "created PVC %s (%s, 1Gi) and pod %s\n", claimName, storageClass, podName)
	pod, err := d.k.podPhase(ctx, podName, corev1.PodRunning)
	if err != nil {
		return err
	}
	d.node = pod.Spec.NodeName
	fmt.Fprintf(d.out, "pod %s Running on node %s\n", podName, d.node)
	lv, err := d.showVolume(ctx, claimName)
	if err != nil {
		return err
	}
	d.lvIDs = append(d.lvIDs, lv)
	if err := d.showLVs(ctx, lv); err != nil {
		return err
	}
	tail, err := d.k.waitOutput(ctx, podName, "wrote: "+greeting)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "pod output (its log):\n%s\n", indent(tail))
	return nil
}

// showVolume prints the claim's PV and LogicalVolume and returns the LV's name on the node.
func (d *demo) showVolume(ctx context.Context, claim string) (string, error) {
	pvc, err := d.k.boundClaim(ctx, claim)
	if err != nil {
		return "", err
	}
	pv, err := d.k.pv(ctx, pvc.Spec.VolumeName)
	if err != nil {
		return "", err
	}
	if pv.Spec.CSI == nil {
		return "", fmt.Errorf("PV %s is not a CSI volume", pv.Name)
	}
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	fmt.Fprintf(d.out, "PVC %s Bound to PV %s (phase %s, %s, driver %s, handle %s)\n",
		claim, pv.Name, pv.Status.Phase, capacity.String(), pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)
	lv, err := d.k.logicalVolume(ctx, pv.Spec.CSI.VolumeHandle)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(d.out, "LogicalVolume %s: node %s, device class %s, size %s\n",
		lv.Name, lv.Spec.NodeName, lv.Spec.DeviceClass, quantity(lv.Status.CurrentSize))
	if lv.Spec.NodeName != d.node {
		return "", fmt.Errorf("LogicalVolume %s is on node %s, the pod on %s", lv.Name, lv.Spec.NodeName, d.node)
	}
	return pv.Spec.CSI.VolumeHandle, nil
}

// showLVs runs lvs on the demo's node (kubectl exec into its node agent) and checks that the
// named LVs are listed.
func (d *demo) showLVs(ctx context.Context, want ...string) error {
	out, err := d.k.runOnNode(ctx, d.node, lvsScript)
	if err != nil {
		return fmt.Errorf("lvs on node %s: %w", d.node, err)
	}
	fmt.Fprintf(
		d.out,
		"lvs on node %s (kubectl exec into its node agent, nsenter into the node):\n%s\n",
		d.node,
		indent(out),
	)
	for _, lv := range want {
		if !strings.Contains(out, lv) {
			return fmt.Errorf("LV %s is not in lvs on node %s", lv, d.node)
		}
	}
	return nil
}

func quantity(q *resource.Quantity) string {
	if q == nil {
		return "(not reported)"
	}
	return q.String()
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
