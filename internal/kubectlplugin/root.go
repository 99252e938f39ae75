package kubectlplugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/mobility"
	"github.com/lvm-operator/lvm-operator/internal/version"
)

// DefaultOperatorNamespace is where the LVMCluster, LVMVolumeGroups and LVMVolumeGroupNodeStatuses live
// unless --operator-namespace says otherwise.
const DefaultOperatorNamespace = "lvms-system"

// Output formats of --output. The empty format is the human table.
const (
	OutputTable = ""
	OutputJSON  = "json"
	OutputYAML  = "yaml"
)

// Options are what every command needs besides its arguments.
type Options struct {
	// OperatorNamespace holds the LVMCluster and the node statuses.
	OperatorNamespace string
	// Namespace is the namespace of namespaced arguments (the PVC of why).
	Namespace string
	// Output is OutputTable, OutputJSON or OutputYAML.
	Output string
}

// Runner is one read-only command: it reads what it needs through c (never writing) and writes its
// report to out. plan, the one command that writes, is RunPlan.
type Runner func(ctx context.Context, c client.Reader, opts Options, args []string, out io.Writer) error

// NewScheme returns a scheme with client-go's types and the lvm.topolvm.io and topolvm.io APIs.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, lvmv1alpha1.AddToScheme, topolvmv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	return s, nil
}

// NewClient returns a client for cfg with NewScheme's types.
func NewClient(cfg *rest.Config) (client.Client, error) {
	s, err := NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("create client for %s: %w", cfg.Host, err)
	}
	return c, nil
}

// rootOptions are the flags of the root command and how to reach the cluster.
type rootOptions struct {
	configFlags       *genericclioptions.ConfigFlags
	restConfig        *rest.Config // given by NewRootCommandWithConfig; else built from configFlags
	operatorNamespace string
	output            string
	// errOut receives the API server's warnings.
	errOut io.Writer
}

// NewRootCommand returns the kubectl-lvms command. It takes kubectl's connection flags (--kubeconfig,
// --context, -n/--namespace, ...) and writes to streams.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newRootCommand(streams, &rootOptions{configFlags: genericclioptions.NewConfigFlags(true)})
}

// NewRootCommandWithConfig returns the kubectl-lvms command talking to the cluster of cfg whatever the
// connection flags say (for tests that hold a rest.Config, not a kubeconfig). The namespace of why is
// -n, else "default".
func NewRootCommandWithConfig(streams genericiooptions.IOStreams, cfg *rest.Config) *cobra.Command {
	return newRootCommand(streams, &rootOptions{configFlags: genericclioptions.NewConfigFlags(false), restConfig: cfg})
}

func newRootCommand(streams genericiooptions.IOStreams, o *rootOptions) *cobra.Command {
	o.errOut = streams.ErrOut
	cmd := &cobra.Command{
		Use:   "kubectl-lvms",
		Short: "Explain the LVM storage of the cluster: volume groups, disks, volumes and pending claims",
		Long: "kubectl lvms reads the objects of the LVM operator (LVMCluster, LVMVolumeGroupNodeStatus,\n" +
			"LogicalVolume) and of Kubernetes (PersistentVolumes, claims, nodes, events) and explains them.\n" +
			"Every command only reads, except plan: it creates an LVMCluster in dry-run\n" +
			"(" + lvmv1alpha1.DryRunAnnotation + ": \"true\") to preview what each node would do with it;\n" +
			"and move, which moves a claim's data to another node after it said what it will do and asked.\n" +
			"No command touches a disk directly.",
		Annotations:  map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl lvms"},
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE:         func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return validateOutput(o.output)
		},
	}
	cmd.CompletionOptions.HiddenDefaultCmd = true
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	o.configFlags.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVar(&o.operatorNamespace, "operator-namespace", DefaultOperatorNamespace,
		"namespace of the LVMCluster and the node statuses")
	cmd.PersistentFlags().StringVarP(&o.output, "output", "o", OutputTable,
		"output format: json or yaml (default: a table for people)")

	cmd.AddCommand(o.subcommands()...)
	return cmd
}

// subcommands are the commands of kubectl lvms.
func (o *rootOptions) subcommands() []*cobra.Command {
	return []*cobra.Command{
		{
			Use:   "status",
			Short: "Show the LVMCluster and the volume group of every device class on every node",
			Args:  cobra.NoArgs,
			RunE:  o.run(RunStatus),
		},
		{
			Use:   "disks [NODE]",
			Short: "Show every disk of every node (or of NODE) and which device class uses it, or why none does",
			Args:  cobra.MaximumNArgs(1),
			RunE:  o.run(RunDisks),
		},
		{
			Use:   "volumes",
			Short: "Show every topolvm.io volume with its claim, node, device class and logical volume",
			Args:  cobra.NoArgs,
			RunE:  o.run(RunVolumes),
		},
		{
			Use:   "why PVC",
			Short: "Explain a PersistentVolumeClaim of the namespace: where it is bound, or why it is not",
			Args:  cobra.ExactArgs(1),
			RunE:  o.run(RunWhy),
		},
		o.planCommand(),
		o.moveCommand(),
		o.evacuateCommand(),
		o.mustGatherCommand(),
		o.versionCommand(),
	}
}

// planCommand is kubectl lvms plan -f FILE.
func (o *rootOptions) planCommand() *cobra.Command {
	opts := PlanOptions{}
	cmd := &cobra.Command{
		Use:   "plan -f FILE",
		Short: "Preview an LVMCluster file: create it in dry-run and show what every node would do, touching no disk",
		Long: "plan creates the LVMCluster of FILE (YAML or JSON; -f - reads stdin) with the annotation\n" +
			lvmv1alpha1.DryRunAnnotation + ": \"true\", in its metadata.namespace or else --operator-namespace.\n" +
			"In dry-run the node agents only plan: they change nothing on any disk, and write what they would\n" +
			"do (wipe, create the volume group on which disks, the thin pool) into the status. plan waits\n" +
			"until every selected node has reported (--timeout), then shows each node's plan and the disks\n" +
			"that no device class would use.\n\n" +
			"Run again with the same file, plan shows the same plan without changing anything. It refuses\n" +
			"when another LVMCluster exists: an applied one (plan previews an LVMCluster before it is\n" +
			"applied), or a dry-run one of another spec (delete it first: that is safe, it changed nothing).\n\n" +
			"To apply the plan, remove the annotation; to discard it, delete the LVMCluster (both commands\n" +
			"are printed at the end).",
		Example: "  kubectl lvms plan -f lvmcluster.yaml\n" +
			"  kubectl lvms plan -f lvmcluster.yaml -o yaml --timeout 10m\n" +
			"  kubectl get lvmcluster my-lvmcluster -n lvms-system -o yaml --context staging | kubectl lvms plan -f -",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, common, err := o.connect(false)
			if err != nil {
				return err
			}
			opts.Options, opts.Stdin = common, cmd.InOrStdin()
			return RunPlan(cmd.Context(), c, opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&opts.File, "filename", "f", "", "the LVMCluster to preview, YAML or JSON (- for stdin)")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", DefaultPlanTimeout,
		"how long to wait for every node's plan")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// moveCommand is kubectl lvms move pvc/NAME --to NODE.
func (o *rootOptions) moveCommand() *cobra.Command {
	opts := mobility.MoveOptions{}
	cmd := &cobra.Command{
		Use:   "move pvc/NAME --to NODE",
		Short: "Move a bound claim's data to another node and bind the claim there (docs/mobility.md)",
		Long: "move copies the data of a bound claim of the namespace to NODE and rebinds the claim there: a new\n" +
			"volume on NODE is filled with a copy of the claim's volume (node agent to node agent, verified), a\n" +
			"new PV is made for it, and the claim is deleted and created again under the same name, labels,\n" +
			"annotations and owner references, bound to the new PV. The old volume is deleted only once the\n" +
			"claim is Bound on NODE. move says what it will do and asks first (--yes does not ask).\n\n" +
			"The claim's pods must not run during the copy: move refuses while a pod uses the claim, unless\n" +
			"--stop-workload: then it cordons the claim's node, deletes the pods that use the claim (their\n" +
			"controller's replacements wait, Pending) and uncordons the node at the end; the replacements\n" +
			"start on NODE. An interrupted move resumes when the same command is run again.",
		Example: "  kubectl lvms move pvc/data-db-0 --to worker-2\n" +
			"  kubectl lvms move pvc/data-db-0 --to worker-2 --stop-workload --yes -n prod",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, ok := strings.CutPrefix(args[0], "pvc/")
			if !ok {
				name, ok = strings.CutPrefix(args[0], "persistentvolumeclaim/")
			}
			if !ok || name == "" {
				return fmt.Errorf("move takes pvc/NAME, not %q", args[0])
			}
			c, common, err := o.connect(true)
			if err != nil {
				return err
			}
			opts.Namespace, opts.Claim, opts.In = common.Namespace, name, cmd.InOrStdin()
			opts.Terminal = isTerminal(cmd.OutOrStdout())
			return mobility.RunMove(cmd.Context(), c, opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&opts.To, "to", "", "the node to move the claim's data to")
	cmd.Flags().BoolVar(&opts.Yes, "yes", false, "move without asking")
	cmd.Flags().BoolVar(&opts.StopWorkload, "stop-workload", false,
		"delete the pods that use the claim and keep their replacements Pending until the claim is on the new node")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", mobility.DefaultMoveTimeout, "how long the whole move may take")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// evacuateCommand is kubectl lvms evacuate NODE.
func (o *rootOptions) evacuateCommand() *cobra.Command {
	opts := mobility.EvacuateOptions{}
	cmd := &cobra.Command{
		Use:   "evacuate NODE",
		Short: "Move every claim whose volume is on NODE to the other nodes, one at a time (docs/mobility.md)",
		Long: "evacuate cordons NODE and moves each bound claim whose volume is on it, as move does, to the\n" +
			"schedulable node with the most free space in its device class, one claim at a time (a StatefulSet\n" +
			"never has more than one replica stopped). It shows the whole plan and asks once (--yes does not\n" +
			"ask); snapshots and volumes without a claim stay and are listed. It refuses while pods use the\n" +
			"claims unless --stop-workload. Run again after an interruption, it resumes. NODE stays cordoned.",
		Example: "  kubectl lvms evacuate worker-1\n  kubectl lvms evacuate worker-1 --stop-workload --yes",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := o.connect(false)
			if err != nil {
				return err
			}
			opts.Node, opts.In = args[0], cmd.InOrStdin()
			opts.Terminal = isTerminal(cmd.OutOrStdout())
			return mobility.RunEvacuate(cmd.Context(), c, opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&opts.Yes, "yes", false, "evacuate without asking")
	cmd.Flags().BoolVar(&opts.StopWorkload, "stop-workload", false,
		"delete the pods that use each claim when its move starts; their replacements wait until it is done")
	cmd.Flags().DurationVar(
		&opts.Timeout,
		"timeout",
		mobility.DefaultMoveTimeout,
		"how long each claim's move may take",
	)
	return cmd
}

// isTerminal reports whether w is a terminal (progress is then drawn in place).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// versionCommand prints the build information of the binary.
func (o *rootOptions) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubectl-lvms",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			return writeReport(cmd.OutOrStdout(), o.output, info, func(out io.Writer) error {
				_, err := fmt.Fprintf(out, "kubectl-lvms %s (commit %s, %s, %s)\n",
					info.Version, info.GitCommit, info.GoVersion, info.Platform)
				return err
			})
		},
	}
}

// run adapts a Runner to cobra: it connects to the cluster and resolves the namespaces first.
func (o *rootOptions) run(r Runner) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, opts, err := o.connect(true)
		if err != nil {
			return err
		}
		return r(cmd.Context(), c, opts, args, cmd.OutOrStdout())
	}
}

// connect returns the client and the Options of a command; namespaced resolves the namespace of its
// arguments too (-n, else the kubeconfig's).
func (o *rootOptions) connect(namespaced bool) (client.Client, Options, error) {
	c, err := o.client()
	if err != nil {
		return nil, Options{}, err
	}
	opts := Options{OperatorNamespace: o.operatorNamespace, Output: o.output}
	if namespaced {
		if opts.Namespace, err = o.namespace(); err != nil {
			return nil, Options{}, err
		}
	}
	return c, opts, nil
}

// config is the connection to the cluster: the one given, else the kubeconfig's.
func (o *rootOptions) config() (*rest.Config, error) {
	if o.restConfig != nil {
		return o.withWarnings(o.restConfig), nil
	}
	cfg, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return o.withWarnings(cfg), nil
}

func (o *rootOptions) client() (client.Client, error) {
	cfg, err := o.config()
	if err != nil {
		return nil, err
	}
	if o.restConfig != nil {
		return NewClient(cfg)
	}
	s, err := NewScheme()
	if err != nil {
		return nil, err
	}
	// The flags' mapper caches discovery on disk as kubectl does.
	mapper, err := o.configFlags.ToRESTMapper()
	if err != nil {
		return nil, fmt.Errorf("discover the API of %s: %w", cfg.Host, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("create client for %s: %w", cfg.Host, err)
	}
	return c, nil
}

// withWarnings returns a copy of cfg that writes the API server's warnings to stderr as kubectl does
// (those of the admission webhook about the LVMCluster that plan creates, say).
func (o *rootOptions) withWarnings(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if o.errOut != nil {
		cfg.WarningHandler = rest.NewWarningWriter(o.errOut, rest.WarningWriterOptions{Deduplicate: true})
	}
	return cfg
}

// namespace is -n, else the kubeconfig context's namespace, else "default".
func (o *rootOptions) namespace() (string, error) {
	if ns := *o.configFlags.Namespace; ns != "" || o.restConfig != nil {
		if ns == "" {
			ns = "default"
		}
		return ns, nil
	}
	ns, _, err := o.configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("read the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

func validateOutput(format string) error {
	switch format {
	case OutputTable, OutputJSON, OutputYAML:
		return nil
	default:
		return fmt.Errorf("unknown output format %q: use json or yaml, or leave -o out for a table", format)
	}
}
