package kubectlplugin

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/placement"
)

// WhyReport is what kubectl lvms why shows about one PersistentVolumeClaim: placement's report,
// which the operator's claim events use too.
type WhyReport = placement.Report

// RunWhy is kubectl lvms why <pvc>.
func RunWhy(ctx context.Context, c client.Reader, opts Options, args []string, out io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("why takes one PersistentVolumeClaim name, got %d arguments", len(args))
	}
	key := client.ObjectKey{Namespace: opts.Namespace, Name: args[0]}
	report, err := placement.Why(ctx, c, opts.OperatorNamespace, key)
	if err != nil {
		return err
	}
	return writeReport(out, opts.Output, report, func(w io.Writer) error { return writeWhyTable(w, report) })
}

// writeWhyTable writes the human form of r.
func writeWhyTable(out io.Writer, r *WhyReport) error {
	var b strings.Builder
	fmt.Fprintf(&b, "PersistentVolumeClaim %s/%s is %s.\n", r.Namespace, r.Claim, orDash(r.Phase))
	kv := newTable(&b)
	if v := r.Bound; v != nil {
		kv.row("  PersistentVolume:", v.PersistentVolume)
		kv.row("  Driver:", orDash(v.Driver))
		kv.row("  Node:", orDash(v.Node))
		kv.row("  Device class:", orDash(v.DeviceClass))
		kv.row("  Size:", placement.FormatBytes(v.SizeBytes))
		kv.row("  Logical volume:", orDash(v.VolumeID))
	} else {
		kv.row("  StorageClass:", storageClassCell(r))
		if r.DeviceClass != "" {
			dc := r.DeviceClass
			if r.DefaultDeviceClass {
				dc += " (the default device class: the StorageClass names none)"
			}
			kv.row("  Device class:", dc)
		}
		kv.row("  Requested:", placement.FormatBytes(r.RequestedBytes))
		kv.row("  Selected node:", cmp.Or(r.SelectedNode, "none yet"))
	}
	if err := kv.flush(); err != nil {
		return err
	}
	if len(r.Nodes) > 0 {
		b.WriteString("\nNodes:\n")
		for _, n := range r.Nodes {
			name := n.Node
			if name == r.SelectedNode {
				name += " (selected)"
			}
			fmt.Fprintf(&b, "  %s: %s\n", name, n.Describe(r.DeviceClass, r.RequestedBytes))
		}
	}
	if r.Bound == nil {
		b.WriteString("\nWarning events, oldest first:\n")
		if len(r.Events) == 0 {
			b.WriteString("  none\n")
		}
		for _, e := range r.Events {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	fmt.Fprintf(&b, "\nVerdict: %s\n", r.Verdict)
	_, err := io.WriteString(out, b.String())
	return err
}

// storageClassCell is the StorageClass line of the table.
func storageClassCell(r *WhyReport) string {
	switch {
	case r.StorageClass == "":
		return "none"
	case r.Provisioner == "":
		return r.StorageClass + " (not found)"
	}
	return fmt.Sprintf("%s (provisioner %s, volumeBindingMode %s)",
		r.StorageClass, r.Provisioner, orDash(r.VolumeBindingMode))
}
