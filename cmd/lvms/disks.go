package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// disksFlags are the settings of `lvms disks`.
type disksFlags struct {
	output    string
	vgName    string
	nodeName  string
	clusterID string
	nsenter   bool
}

func newDisksCommand() *cobra.Command {
	f := disksFlags{}
	cmd := &cobra.Command{
		Use:   "disks",
		Short: "List this node's block devices with the device filter's verdict and reasons (changes nothing)",
		Long: "disks runs the node agent's device filter, the same code the volume-group manager uses, on\n" +
			"the node it runs on, and prints every block device with whether a volume group could use it\n" +
			"and, if not, why. It reads only: nothing on the host is changed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDisks(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
	fl.StringVar(&f.vgName, "volume-group", "",
		"evaluate for this volume group: its PVs count as usable only when it is this node's lvms volume group "+
			"(tagged lvms, and not tagged for another node or cluster)")
	fl.StringVar(&f.nodeName, "node-name", envOr("NODE_NAME", ""),
		"this node's name, checked against the volume group's lvms.node tag (in the node agent's pod: NODE_NAME)")
	fl.StringVar(&f.clusterID, "cluster-id", envOr(clusterIDEnv, ""),
		"this cluster's ID, checked against the volume group's lvms.cluster tag (in the node agent's pod: "+
			clusterIDEnv+")")
	fl.BoolVar(&f.nsenter, "nsenter", false,
		"run host commands and read mounts in the namespaces of the host's PID 1 (in a pod with hostPID)")
	return cmd
}

// diskReport is one device in `lvms disks -o json`.
type diskReport struct {
	Name         string   `json:"name"`
	KName        string   `json:"kname"`
	Type         string   `json:"type"`
	SizeBytes    uint64   `json:"sizeBytes"`
	Usable       bool     `json:"usable"`
	Reasons      []string `json:"reasons"`
	Signatures   []string `json:"signatures,omitempty"`
	PartTable    string   `json:"partitionTable,omitempty"`
	Holders      []string `json:"holders,omitempty"`
	Partitions   []string `json:"partitions,omitempty"`
	MountPoints  []string `json:"mountPoints,omitempty"`
	Swap         bool     `json:"swap,omitempty"`
	OpenBy       []string `json:"openBy,omitempty"`
	NotExclusive string   `json:"notExclusive,omitempty"`
}

func runDisks(cmd *cobra.Command, f disksFlags) error {
	if f.output != "table" && f.output != "json" {
		return fmt.Errorf("--output %q: want table or json", f.output)
	}
	var opts []exec.HostOption
	var devOpts []devices.Option
	if f.nsenter {
		opts = append(opts, exec.WithPrefix(exec.NSEnterPrefix()...))
		devOpts = append(devOpts, devices.WithMountInfo("proc/1/mountinfo"))
	}
	e := exec.NewHost(opts...)
	filter := devices.NewLoopFilter(e, os.DirFS("/"), hostLVMConfDir(f.nsenter))
	state, err := lvm.New(e).WithConfig(filter.Config).State(cmd.Context())
	if err != nil {
		return fmt.Errorf("read LVM state: %w", err)
	}
	policy := devices.Policy{VGName: f.vgName, PVs: state.PVVolumeGroups()}
	if why := notOurVG(state, f.vgName, lvm.Identity{Node: f.nodeName, Cluster: f.clusterID}); why != "" {
		// As the node agent does: another's volume group of that name is not ours to extend, so
		// its PVs are another volume group's.
		fmt.Fprintf(cmd.ErrOrStderr(), "volume group %s is not this node's lvms volume group (%s): "+
			"its PVs are another volume group's\n", f.vgName, why)
		policy.VGName = ""
	}
	verdicts, err := devices.NewHost(e, os.DirFS("/"), devOpts...).Plan(cmd.Context(), policy)
	if err != nil {
		return err
	}
	reports := make([]diskReport, 0, len(verdicts))
	for _, v := range verdicts {
		reports = append(reports, diskReport{
			Name: v.Device.Name, KName: v.Device.KName, Type: v.Device.Type, SizeBytes: v.Device.Size,
			Usable: v.Usable(), Reasons: append([]string{}, v.Reasons...), Signatures: v.Facts.Signatures,
			PartTable: v.Facts.PartTable, Holders: v.Facts.Holders, Partitions: v.Facts.Partitions,
			MountPoints: v.Facts.MountPoints, Swap: v.Facts.Swap, OpenBy: v.Facts.OpenBy,
			NotExclusive: v.Facts.NotExclusive,
		})
	}
	if f.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(reports)
	}
	return printDisks(cmd.OutOrStdout(), reports)
}

// printDisks writes the human table: one row per device, every reason on its row.
func printDisks(out io.Writer, reports []diskReport) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "DEVICE\tTYPE\tSIZE\tUSABLE\tREASONS")
	for _, r := range reports {
		usable := "no"
		if r.Usable {
			usable = "yes"
		}
		size := resource.NewQuantity(int64(r.SizeBytes), resource.BinarySI).String() //nolint:gosec // sizes fit
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Type, size, usable, strings.Join(r.Reasons, "; "))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// hostLVMConfDir is where the host's /etc/lvm is seen from this process (for
// devices.NewLoopFilter): through PID 1's root when commands enter the host's
// namespaces with nsenter, else in place.
func hostLVMConfDir(nsenter bool) string {
	if nsenter {
		return "proc/1/root/etc/lvm"
	}
	return "etc/lvm"
}

// clusterIDEnv holds the cluster ID in the node agent's container, for `lvms disks --cluster-id`.
const clusterIDEnv = "LVMS_CLUSTER_ID"

// notOurVG says why the volume group name found in state is not one the node agent of id may use:
// not tagged lvms, or tagged for another node or cluster. "" when it is ours, or absent.
func notOurVG(state *lvm.State, name string, id lvm.Identity) string {
	if name == "" {
		return ""
	}
	vg, ok := state.VG(name)
	switch {
	case !ok:
		return ""
	case !vg.Owned():
		return "it is not tagged " + lvm.Tag
	default:
		return id.Foreign(vg.Tags)
	}
}
