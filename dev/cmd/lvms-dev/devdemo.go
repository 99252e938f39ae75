package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster"
	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/demo"
)

// newDevDemoCommand is `lvms-dev demo`: the `make demo` walk through a volume's life. It reads the
// dev command's persistent --state-dir.
func newDevDemoCommand() *cobra.Command {
	o := demo.Options{}
	var diskGiB int
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Bring up the dev cluster and walk a PVC through provision, expansion, snapshot, clone and deletion",
		Long: "lvms-dev demo starts the dev cluster unless one is up, creates the sample LVMCluster and shows each\n" +
			"step of a volume's life on real lvm2 with its duration. The cluster is stopped at the end unless\n" +
			"--keep (KEEP=1) is given or it was running before. See docs/demo.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stateDir, err := cmd.Flags().GetString("state-dir")
			if err != nil {
				return fmt.Errorf("flag --state-dir: %w", err)
			}
			o.StateDir, o.Out = stateDir, cmd.OutOrStdout()
			o.Up.DiskSize = int64(diskGiB) << 30
			if o.Sample == "" {
				o.Sample = filepath.Join(o.Up.RepoDir, "config", "samples", "lvm_v1alpha1_lvmcluster.yaml")
			}
			return demo.Run(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&o.Keep, "keep", os.Getenv("KEEP") == "1", "leave the cluster running at the end (default from KEEP=1)")
	fl.StringVar(&o.Namespace, "namespace", "default", "namespace of the demo's PVCs, pods and snapshot")
	fl.StringVar(
		&o.Sample,
		"sample",
		"",
		"LVMCluster manifest (default: <repo>/config/samples/lvm_v1alpha1_lvmcluster.yaml)",
	)
	fl.StringVar(
		&o.AccessMode,
		"access-mode",
		"ReadWriteOnce",
		"access mode of the demo's claims (ReadWriteOnce, ReadWriteOncePod)",
	)
	fl.DurationVar(&o.StepTimeout, "step-timeout", 3*time.Minute, "bound of each wait in the flow")
	fl.IntVar(&o.Up.Nodes, "nodes", 2, "guest nodes when the demo starts the cluster")
	fl.IntVar(&o.Up.Disks, "disks", 3, "sparse disks per node")
	fl.IntVar(&diskGiB, "disk-size", 8, "size of each disk in GiB (sparse)")
	fl.IntVar(&o.Up.MemoryMiB, "memory", devcluster.DefaultMemoryMiB, "memory per guest in MiB")
	fl.StringVar(
		&o.Up.ImagesDir,
		"images-dir",
		"",
		"OCI archives the nodes import (default: <repo>/_output/images; make images builds them)",
	)
	fl.StringVar(&o.Up.RepoDir, "repo", "", "repository root (default: found above the working directory)")
	fl.StringVar(
		&o.Up.KubeAssets,
		"kube-assets",
		os.Getenv("KUBEBUILDER_ASSETS"),
		"directory with etcd, kube-apiserver, ... (default: hack/kube-assets.sh)",
	)
	fl.DurationVar(&o.Up.Timeout, "up-timeout", 12*time.Minute, "how long lvms-dev up waits for the cluster")
	return cmd
}
