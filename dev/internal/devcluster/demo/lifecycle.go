package demo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// expandedSize is the claim's size after the online expansion.
var expandedSize = resource.MustParse("2Gi")

// expand grows the claim while the writer pod has it mounted and shows the new filesystem size.
func (d *demo) expand(ctx context.Context) error {
	key := client.ObjectKey{Namespace: d.k.ns, Name: claimName}
	var pvc corev1.PersistentVolumeClaim
	if err := d.k.c.Get(ctx, key, &pvc); err != nil {
		return fmt.Errorf("get PVC %s: %w", claimName, err)
	}
	patch := client.MergeFrom(pvc.DeepCopy())
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = expandedSize
	if err := d.k.c.Patch(ctx, &pvc, patch); err != nil {
		return fmt.Errorf("patch PVC %s to %s: %w", claimName, expandedSize.String(), err)
	}
	fmt.Fprintf(d.out, "patched PVC %s to %s (pod %s keeps it mounted)\n", claimName, expandedSize.String(), podName)
	err := d.k.waitFor(
		ctx,
		"PV and PVC capacity "+expandedSize.String(),
		func(ctx context.Context) (bool, string, error) {
			if err := d.k.c.Get(ctx, key, &pvc); err != nil {
				return false, "", fmt.Errorf("get PVC %s: %w", claimName, err)
			}
			pv, err := d.k.pv(ctx, pvc.Spec.VolumeName)
			if err != nil {
				return false, "", err
			}
			pvCap, pvcCap := pv.Spec.Capacity[corev1.ResourceStorage], pvc.Status.Capacity[corev1.ResourceStorage]
			saw := fmt.Sprintf(
				"PV %s, PVC status %s, conditions %v",
				pvCap.String(),
				pvcCap.String(),
				pvc.Status.Conditions,
			)
			return pvCap.Cmp(expandedSize) >= 0 && pvcCap.Cmp(expandedSize) >= 0, saw, nil
		},
	)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "PV %s and PVC %s report %s\n", pvc.Spec.VolumeName, claimName, expandedSize.String())
	var tail string
	err = d.k.waitFor(
		ctx,
		"the filesystem in pod "+podName+" to grow",
		func(ctx context.Context) (bool, string, error) {
			var p corev1.Pod
			if err := d.k.c.Get(ctx, client.ObjectKey{Namespace: d.k.ns, Name: podName}, &p); err != nil {
				return false, "", fmt.Errorf("get pod %s: %w", podName, err)
			}
			tail = d.k.output(ctx, &p)
			kib, ok := LastDFSize(tail)
			return ok && kib > 3<<19, fmt.Sprintf("df output %q", tail), nil // > 1.5 GiB
		},
	)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "df inside pod %s (1K-blocks, its output):\n%s\n", podName, indent(tail))
	lv, err := d.k.logicalVolume(ctx, d.lvIDs[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "LogicalVolume %s size %s\n", lv.Name, quantity(lv.Status.CurrentSize))
	return nil
}

// LastDFSize is the 1K-blocks column of the last "df:" line of a writer's output (the demo's and
// the e2e suite's expansion checks). The column is counted from the end (blocks, used,
// available, use%, mount point), so a line without the file system name (df wraps a long one
// onto a line of its own) still parses.
func LastDFSize(out string) (int64, bool) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) < 6 || f[0] != "df:" {
			continue
		}
		n, err := strconv.ParseInt(f[len(f)-5], 10, 64)
		return n, err == nil
	}
	return 0, false
}

// snapshot takes a VolumeSnapshot of the claim and waits until it is ready.
func (d *demo) snapshot(ctx context.Context) error {
	if err := d.k.c.Create(ctx, NewSnapshot(d.k.ns, snapshotName, storageClass, claimName)); err != nil {
		return fmt.Errorf("create VolumeSnapshot %s: %w", snapshotName, err)
	}
	fmt.Fprintf(d.out, "created VolumeSnapshot %s of PVC %s (class %s)\n", snapshotName, claimName, storageClass)
	handle, size, err := d.k.readySnapshot(ctx, snapshotName)
	if err != nil {
		return err
	}
	d.lvIDs = append(d.lvIDs, handle)
	fmt.Fprintf(d.out, "VolumeSnapshot %s readyToUse, restoreSize %s, snapshot LV %s\n", snapshotName, size, handle)
	return nil
}

// restore creates a claim from the snapshot, reads it from a pod on the same node and shows the LVs.
func (d *demo) restore(ctx context.Context) error {
	src := &corev1.TypedObjectReference{APIGroup: new(snapshotGVK.Group), Kind: snapshotGVK.Kind, Name: snapshotName}
	if err := d.k.createClaim(ctx, cloneName, expandedSize.String(), src); err != nil {
		return err
	}
	script := "cat " + demoFile + " && df -k " + mountPath + " | tail -n 1"
	if err := d.k.createPod(
		ctx,
		podSpec{
			name:    clonePodName,
			script:  script,
			claim:   cloneName,
			onNode:  d.node,
			restart: corev1.RestartPolicyNever,
		},
	); err != nil {
		return err
	}
	fmt.Fprintf(
		d.out,
		"created PVC %s from VolumeSnapshot %s and pod %s (node %s)\n",
		cloneName,
		snapshotName,
		clonePodName,
		d.node,
	)
	pod, err := d.k.podPhase(ctx, clonePodName, corev1.PodSucceeded)
	if err != nil {
		return err
	}
	out := d.k.output(ctx, pod)
	fmt.Fprintf(d.out, "pod %s ran on node %s, output:\n%s\n", clonePodName, pod.Spec.NodeName, indent(out))
	if !strings.Contains(out, greeting) {
		return fmt.Errorf("the clone does not hold the written data: pod %s printed %q", clonePodName, out)
	}
	lv, err := d.showVolume(ctx, cloneName)
	if err != nil {
		return err
	}
	d.lvIDs = append(d.lvIDs, lv)
	return d.showLVs(ctx, d.lvIDs...)
}

// cleanup deletes everything the demo created and checks that the LVs are gone from the node.
func (d *demo) cleanup(ctx context.Context) error {
	if err := d.deleteDemoObjects(ctx); err != nil {
		return err
	}
	fmt.Fprintf(
		d.out,
		"deleted pods %s, %s, PVCs %s, %s and VolumeSnapshot %s\n",
		podName,
		clonePodName,
		claimName,
		cloneName,
		snapshotName,
	)
	err := d.k.waitFor(ctx, "the LogicalVolumes to be gone", func(ctx context.Context) (bool, string, error) {
		left, err := d.k.logicalVolumes(ctx, d.lvIDs...)
		if err != nil {
			return false, "", err
		}
		names := make([]string, 0, len(left))
		for _, lv := range left {
			names = append(names, lv.Name)
		}
		return len(left) == 0, "left: " + strings.Join(names, ", "), nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "no LogicalVolume is left for %s\n", strings.Join(d.lvIDs, ", "))
	out, err := d.k.runOnNode(ctx, d.node, lvsScript)
	if err != nil {
		return fmt.Errorf("lvs on node %s: %w", d.node, err)
	}
	fmt.Fprintf(d.out, "lvs on node %s:\n%s\n", d.node, indent(out))
	var errs []error
	for _, lv := range d.lvIDs {
		if strings.Contains(out, lv) {
			errs = append(errs, fmt.Errorf("LV %s is still on node %s", lv, d.node))
		}
	}
	return errors.Join(errs...)
}
