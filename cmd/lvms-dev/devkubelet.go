package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lvm-operator/lvm-operator/internal/devcluster/kubelet"
)

// devKubeletFlags are the settings of `lvms-dev dev-kubelet`.
type devKubeletFlags struct {
	nodeName, kubeconfig, csiSocket string
	rootDir, stateDir               string
	heartbeat                       time.Duration
	cpu, memory, pods               string
	labels                          map[string]string
	userNamespace                   bool
}

// newDevKubeletCommand is the dev cluster's kubelet stand-in (test infrastructure, hidden).
func newDevKubeletCommand() *cobra.Command {
	f := devKubeletFlags{}
	cmd := &cobra.Command{
		Use:   "dev-kubelet",
		Short: "Test infrastructure: a kubelet stand-in for dev-cluster nodes (not a kubelet)",
		Long: "dev-kubelet registers a Node and keeps it Ready, writes the CSINode of topolvm.io from the\n" +
			"CSI node service, publishes the CSI volumes of the pods bound to the node and runs each pod's\n" +
			"first container command as a process in a private mount namespace. No images, no containers.\n" +
			"See docs/dev-kubelet.md.",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDevKubelet(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.nodeName, "node-name", os.Getenv("NODE_NAME"), "name of the Node to register (required)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server")
	fl.StringVar(&f.csiSocket, "csi-socket", "/run/topolvm/csi-topolvm.sock", "CSI node service socket of the node agent")
	fl.StringVar(&f.rootDir, "root-dir", kubelet.DefaultRootDir, "kubelet root directory (publish targets)")
	fl.StringVar(&f.stateDir, "state-dir", kubelet.DefaultStateDir, "state directory (pods/<namespace>_<name>.log)")
	fl.DurationVar(&f.heartbeat, "heartbeat", kubelet.DefaultHeartbeat, "node status and Lease renewal interval")
	fl.StringVar(&f.cpu, "cpu", "4", "reported CPU capacity")
	fl.StringVar(&f.memory, "memory", "8Gi", "reported memory capacity")
	fl.StringVar(&f.pods, "pods", "110", "reported pod capacity")
	fl.StringToStringVar(&f.labels, "node-labels", nil, "extra Node labels (key=value,...)")
	fl.BoolVar(&f.userNamespace, "user-namespace", false,
		"run pod processes in an unprivileged user namespace too (for running without root; not in guests)")
	return cmd
}

func runDevKubelet(cmd *cobra.Command, f devKubeletFlags) error {
	if f.nodeName == "" {
		return errors.New("--node-name (or NODE_NAME) is required")
	}
	capacity := corev1.ResourceList{}
	for name, v := range map[corev1.ResourceName]string{
		corev1.ResourceCPU: f.cpu, corev1.ResourceMemory: f.memory, corev1.ResourcePods: f.pods} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("capacity %s: %w", name, err)
		}
		capacity[name] = q
	}
	ctrl.SetLogger(zap.New())
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.UserAgent = "lvms-dev-kubelet/" + f.nodeName
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	conn, err := kubelet.DialCSI(f.csiSocket)
	if err != nil {
		return err
	}
	defer conn.Close() //nolint:errcheck // closing at exit
	runner := kubelet.ExecRunner{}
	if f.userNamespace {
		runner.Prefix = []string{"unshare", "--user", "--map-root-user", "--mount", "--propagation", "private", "--"}
	}
	k := kubelet.New(kubelet.Config{
		NodeName: f.nodeName, RootDir: f.rootDir, StateDir: f.stateDir, Heartbeat: f.heartbeat,
		Capacity: capacity, Labels: f.labels,
	}, kubelet.Deps{Client: client, CSI: csi.NewNodeClient(conn), Runner: runner})
	ctx := ctrl.LoggerInto(cmd.Context(), ctrl.Log.WithName("dev-kubelet"))
	return k.Run(ctx)
}
