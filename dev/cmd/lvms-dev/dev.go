package main

import (
	"errors"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster"
)

// errNotClean makes `lvms-dev status --check-clean` exit non-zero.
var errNotClean = errors.New("the dev cluster left something running")

func newDevCommand() *cobra.Command {
	def, err := devcluster.DefaultStateDir()
	if err != nil {
		def = "_output/dev-cluster"
	}
	var stateDir string
	cmd := &cobra.Command{
		SilenceUsage: true,
		Use:          "lvms-dev",
		Short:        "Development tooling for lvms: a local cluster on 127.0.0.1 whose nodes are User-mode Linux guests",
		Long: "lvms-dev up|down|status|demo runs a local Kubernetes cluster whose N nodes are User-mode Linux guests\n" +
			"running the kubelet, containerd and real lvm2, with the product installed from config/default.\n" +
			"Everything lives in --state-dir; see docs/dev-cluster.md.",
	}
	cmd.PersistentFlags().StringVar(
		&stateDir,
		"state-dir",
		def,
		"directory holding the cluster's certificates, logs, pid files and disks",
	)
	cmd.AddCommand(newDevUpCommand(&stateDir), newDevDownCommand(&stateDir), newDevStatusCommand(&stateDir),
		newDevSuperviseCommand(&stateDir))
	return cmd
}

func newDevUpCommand(stateDir *string) *cobra.Command {
	o := devcluster.UpOptions{}
	var diskGiB int
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the dev cluster and wait until its nodes are Ready",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.StateDir, o.Out, o.DiskSize = *stateDir, cmd.OutOrStdout(), int64(diskGiB)<<30
			return devcluster.Up(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Nodes, "nodes", 2, "number of guest nodes")
	fl.IntVar(&o.Disks, "disks", 3, "sparse disks per node (/dev/ubda, /dev/ubdb, ...)")
	fl.IntVar(&diskGiB, "disk-size", 8, "size of each disk in GiB (sparse)")
	fl.IntVar(&o.MemoryMiB, "memory", devcluster.DefaultMemoryMiB, "memory per guest in MiB")
	fl.IntVar(&o.MaxPods, "max-pods", devcluster.DefaultMaxPods, "pods per node at most (the kubelet's maxPods)")
	fl.StringVar(
		&o.ImagesDir,
		"images-dir",
		"",
		"OCI archives the nodes import (default: <repo>/_output/images; make images builds them)",
	)
	fl.StringSliceVar(&o.ExtraImagesDirs, "extra-images-dir", nil,
		"more directories of OCI archives the nodes import (the storage e2e suite's: hack/conformance.sh)")
	fl.BoolVar(&o.NoProduct, "no-product", false, "do not install the product (config/default): the nodes alone")
	fl.BoolVar(&o.SchedulerExtender, "scheduler-extender", false,
		"install the product with its scheduler extender and pod webhook (config/components/scheduler-extender) "+
			"and configure the kube-scheduler to call the extender")
	fl.BoolVar(&o.SnapshotMetadata, "snapshot-metadata", false,
		"install the product with its snapshot metadata service (config/components/snapshot-metadata) and the "+
			"SnapshotMetadataService CRD, and import the external-snapshot-metadata sidecar and snapshot-metadata-lister images")
	fl.BoolVar(&o.Evacuator, "evacuator", false,
		"install the product with its evacuator (config/components/evacuator): the Deployment lvms-evacuator, "+
			"which evacuates the nodes labelled lvms.topolvm.io/evacuate=true")
	fl.BoolVar(&o.Profiling, "profiling", false,
		"install the product with config/components/profiling: the operator and the node agents serve pprof "+
			"on their metrics endpoints (ClusterRole lvms-profile-reader)")
	fl.StringArrayVar(&o.APIServerArgs, "apiserver-arg", nil, "one more kube-apiserver flag (repeat the option)")
	fl.StringArrayVar(&o.ControllerManagerArgs, "controller-manager-arg", nil,
		"one more kube-controller-manager flag (repeat the option)")
	fl.StringSliceVar(&o.Users, "user", nil,
		"users to write a kubeconfig for, <state>/kubeconfig-<user> (group system:masters), to tell components apart "+
			"in the API server's audit log")
	fl.StringVar(&o.RepoDir, "repo", "", "repository root (default: found above the working directory)")
	fl.StringVar(
		&o.KubeAssets,
		"kube-assets",
		os.Getenv("KUBEBUILDER_ASSETS"),
		"directory with etcd, kube-apiserver, ... (default: hack/kube-assets.sh)",
	)
	fl.StringVar(
		&o.CSITools,
		"csi-tools",
		"",
		"directory with the CSI sidecars and snapshot-crds/ (default: hack/csi-tools.sh)",
	)
	fl.DurationVar(
		&o.Timeout,
		"timeout",
		25*time.Minute,
		"how long to wait for the cluster once the supervisor runs (each phase has its own, shorter bound that fails with a precise error; this one catches the rest, so it exceeds their sum: nodes 6 min, product 10 min)",
	)
	return cmd
}

func newDevDownCommand(stateDir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the dev cluster and everything it started (idempotent)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return devcluster.Down(cmd.Context(), *stateDir, cmd.OutOrStdout())
		},
	}
}

func newDevStatusCommand(stateDir *string) *cobra.Command {
	var checkClean bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show which processes, guests and listeners of the dev cluster are up",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			clean, err := devcluster.Status(*stateDir, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if checkClean && !clean {
				return errNotClean
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&checkClean, "check-clean", false, "exit non-zero if anything is left")
	return cmd
}

func newDevSuperviseCommand(stateDir *string) *cobra.Command {
	return &cobra.Command{
		Use:    "supervise",
		Short:  "Run the dev cluster in the foreground (started by up)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return devcluster.Supervise(cmd.Context(), *stateDir, cmd.OutOrStdout())
		},
	}
}
