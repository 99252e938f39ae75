package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/demo"
)

// The implementations of the topolvm.io provisioner the benchmark knows: lvms (this repository's
// product) and TopoLVM itself, the peer of make bench-peer. Both keep topolvm.io/v1 LogicalVolumes
// (spec.name the volume's name, status.volumeID once the LV exists), so the benchmark watches them
// for either; the floor runs through lvms' node agents or through the pods of --node-shell, and
// the resource figures and profiles read lvms' pods only.
const (
	driverLvms    = "lvms"
	driverTopoLVM = "topolvm"
)

// addDriverFlags adds the flags that say which implementation serves the class, and how the floor
// reaches a node when it is not lvms.
func addDriverFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.driver, "driver", driverLvms,
		"implementation behind a topolvm.io class: lvms (floor through its node agents, resources and profiles "+
			"from its pods) or topolvm (TopoLVM: floor through --node-shell, no resources)")
	fs.StringVar(&o.driverVersion, "driver-version", "",
		"the driver's version, recorded in result.json and printed (e.g. git describe of lvms, TopoLVM's release)")
	fs.StringVar(&o.nodeShell, "node-shell", "",
		"with --driver topolvm: NAMESPACE/SELECTOR of privileged hostPID pods, one per node, with nsenter and sh, "+
			"through which the floor runs its lvcreates on the node (make bench-peer's peer-node-shell)")
	fs.StringVar(&o.floorVG, "floor-vg", "",
		"with --driver topolvm: the volume group of the floor's lvcreates (lvms reads it from its LVMCluster)")
	fs.StringVar(&o.floorThinPool, "floor-thin-pool", "",
		"with --driver topolvm: the thin pool in --floor-vg of a thin class's floor (none: thick)")
}

// checkDriverFlags validates the flags of addDriverFlags.
func checkDriverFlags(o *options) error {
	switch o.driver {
	case driverLvms:
		return nil
	case driverTopoLVM:
	default:
		return fmt.Errorf("--driver %q: want %s or %s", o.driver, driverLvms, driverTopoLVM)
	}
	if !o.floor {
		return nil
	}
	if o.floorVG == "" {
		return errors.New("--driver topolvm with --floor needs --floor-vg")
	}
	if ns, sel, ok := strings.Cut(o.nodeShell, "/"); !ok || ns == "" || sel == "" {
		return fmt.Errorf("--driver topolvm with --floor needs --node-shell NAMESPACE/SELECTOR (got %q)", o.nodeShell)
	}
	return nil
}

// floorTarget is the VG and thin pool of the floor: from the LVMCluster for lvms, from the flags
// for another driver.
func (p *floorProbe) floorTarget(ctx context.Context, params map[string]string) (vg, pool string, err error) {
	if p.o.driver != driverLvms {
		return p.o.floorVG, p.o.floorThinPool, nil
	}
	return p.deviceClass(ctx, params)
}

// nodeExec runs script in the mount namespace of node: through lvms' node agent, or through the
// --node-shell pod on the node for another driver.
func (p *floorProbe) nodeExec(ctx context.Context, node, script string) (string, error) {
	if p.o.driver == driverLvms {
		out, err := demo.AgentExec(ctx, p.cfg, p.c, p.cs, p.o.operatorNamespace, node, script)
		if err != nil {
			return out, fmt.Errorf("through the node agent: %w", err)
		}
		return out, nil
	}
	ns, selector, _ := strings.Cut(p.o.nodeShell, "/")
	pods, err := p.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: selector, FieldSelector: "spec.nodeName=" + node,
	})
	if err != nil {
		return "", fmt.Errorf("list the node shell pods %s on %s: %w", p.o.nodeShell, node, err)
	}
	var shell *corev1.Pod
	for i := range pods.Items {
		if pod := &pods.Items[i]; pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
			shell = pod
		}
	}
	if shell == nil {
		return "", fmt.Errorf("no running node shell pod %s on %s (%d found)", p.o.nodeShell, node, len(pods.Items))
	}
	out, err := demo.PodExec(ctx, p.cfg, p.cs, shell, shell.Spec.Containers[0].Name,
		"nsenter", "--target=1", "--mount", "--", "/bin/sh", "-c", script)
	if err != nil {
		return out, fmt.Errorf("through the node shell: %w", err)
	}
	return out, nil
}
