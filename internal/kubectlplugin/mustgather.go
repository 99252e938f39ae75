package kubectlplugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/lvm-operator/lvm-operator/internal/mustgather"
)

// mustGatherCommand is kubectl lvms must-gather.
func (o *rootOptions) mustGatherCommand() *cobra.Command {
	var dest string
	opts := mustgather.Options{}
	cmd := &cobra.Command{
		Use:   "must-gather",
		Short: "Collect the LVM storage's objects, events, logs and every node's LVM state into one tarball",
		Long: "must-gather writes one .tar.gz for a support case (docs/kubectl-lvms.md lists its files):\n" +
			"  - the LVMCluster, LVMVolumeGroups, node statuses and LogicalVolumes; the driver's StorageClasses,\n" +
			"    PVs, claims, snapshot classes and contents, CSIDriver, CSINodes and webhook configurations;\n" +
			"    the nodes; the pods, Deployments, DaemonSets, Services, Leases, capacities and events of the\n" +
			"    operator's namespace, and the events about the driver's claims, PVs, nodes and objects;\n" +
			"  - the log of every container in the operator's namespace (and of its last run if it restarted);\n" +
			"  - from every node, through its node agent's pod (kubectl exec), the host's lvm version, vgs,\n" +
			"    lvs, pvs, lsblk, dmsetup info and tree, lvm.conf, lvmconfig's changes, the devices file,\n" +
			"    the mounts and uname.\n" +
			"It only reads, and never reads a Secret; dmsetup table (it can show dm-crypt keys) is not run.\n" +
			"What it could not collect is listed at the end and in errors.txt; the rest is still written.\n" +
			"It needs to list and get those objects, and pods/log and pods/exec in the operator's namespace.",
		Example: "  kubectl lvms must-gather\n" +
			"  kubectl lvms must-gather --dest case-1234.tar.gz --since 24h",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := o.config()
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return fmt.Errorf("create client for %s: %w", cfg.Host, err)
			}
			opts.OperatorNamespace = o.operatorNamespace
			g := mustgather.New(c, cs, mustgather.NewPodExec(cfg, cs), opts)
			if dest == "" {
				dest = "lvms-must-gather-" + time.Now().UTC().Format("20060102-150405") + ".tar.gz"
			}
			return RunMustGather(cmd.Context(), g, dest, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&dest, "dest", "",
		"the file to write (default lvms-must-gather-DATE-TIME.tar.gz; - writes the tarball to stdout)")
	cmd.Flags().DurationVar(&opts.Since, "since", 0, "only logs newer than this (default: all the kubelet keeps)")
	cmd.Flags().Int64Var(&opts.LogLimitBytes, "log-limit-bytes", mustgather.DefaultLogLimitBytes,
		"at most this many bytes of each container's log")
	return cmd
}

// RunMustGather writes g's tarball to dest (a new file; "-" is out) and what it collected to out, or to
// errOut when the tarball goes to out. A file that could not be completed is removed.
func RunMustGather(ctx context.Context, g *mustgather.Gatherer, dest string, out, errOut io.Writer) error {
	if dest == "-" {
		sum, err := g.Run(ctx, out)
		if err != nil {
			return err
		}
		return writeGatherSummary(errOut, "stdout", sum)
	}
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("must-gather: %w", err)
	}
	sum, err := g.Run(ctx, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("must-gather: write %s: %w", dest, cerr)
	}
	if err != nil {
		return errors.Join(err, os.Remove(dest))
	}
	return writeGatherSummary(out, dest, sum)
}

func writeGatherSummary(w io.Writer, dest string, sum *mustgather.Summary) error {
	_, err := fmt.Fprintf(w, "Wrote %s: %d files (%s before compression), the LVM state of %d node(s) %v.\n",
		dest, sum.Files, fmt.Sprintf("%.1f MiB", float64(sum.Bytes)/(1<<20)), len(sum.Nodes), sum.Nodes)
	if err != nil || len(sum.Problems) == 0 {
		return err
	}
	if _, err := fmt.Fprintf(w, "Not collected (%d, also in errors.txt):\n", len(sum.Problems)); err != nil {
		return err
	}
	for _, p := range sum.Problems {
		if _, err := fmt.Fprintf(w, "  %s\n", p); err != nil {
			return err
		}
	}
	return nil
}
