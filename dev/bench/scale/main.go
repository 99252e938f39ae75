// Command scale is the control-plane scale benchmark (make bench-scale, docs/performance.md): the
// real control plane (kube-apiserver, etcd, kube-scheduler, kube-controller-manager of a dev
// cluster without guest nodes), the product's operator and the csi-provisioner as host processes,
// kwok keeping thousands of Nodes and their pods alive, and the simulated node agents of
// dev/internal/simnode. At each step it grows the cluster to a node count and measures the
// operator's RSS and CPU, the API requests of each component by verb and resource (from the API
// server's audit log), how long the LVMCluster status and the nodes' CSIStorageCapacity objects
// take to follow, a node joining, claims provisioned per second and `kubectl lvms status`.
//
// It is development tooling, never part of the product binary.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	stateDir      string // the dev cluster's state directory (kubeconfigs)
	auditLog      string
	lvms          string
	kubectlLVMS   string
	provisioner   string
	kwok          string
	manifest      string // config/manager/manager.yaml: the csi-provisioner's arguments
	lvmcluster    string
	results       string
	namespace     string
	steps         []int
	claims        int
	addWorkers    int
	simWorkers    int
	settle        time.Duration
	convergeLimit time.Duration
	diskSize      string
	unfiltered    bool
	atOnce        bool
}

func parseFlags() (options, error) {
	var o options
	var steps string
	flag.StringVar(&o.stateDir, "state-dir", "", "the dev cluster's state directory (lvms-dev up --nodes 0)")
	flag.StringVar(&o.auditLog, "audit-log", "", "the API server's audit log (--audit-log-path)")
	flag.StringVar(&o.lvms, "lvms", "bin/lvms", "the product binary")
	flag.StringVar(&o.kubectlLVMS, "kubectl-lvms", "bin/kubectl-lvms", "the kubectl plugin")
	flag.StringVar(&o.provisioner, "csi-provisioner", "", "the csi-provisioner binary")
	flag.StringVar(&o.kwok, "kwok", "", "the kwok binary")
	flag.StringVar(&o.manifest, "manager-manifest", "config/manager/manager.yaml",
		"the operator's Deployment, whose csi-provisioner arguments are used")
	flag.StringVar(&o.lvmcluster, "lvmcluster", "dev/bench/lvmcluster.yaml", "the LVMCluster to apply")
	flag.StringVar(&o.results, "results", "", "results directory")
	flag.StringVar(&o.namespace, "namespace", "lvms-system", "the operator namespace")
	flag.StringVar(&steps, "steps", "100,1000,5000", "node counts to grow the cluster to, in order")
	flag.IntVar(&o.claims, "claims", 100, "claims (each with a pod) provisioned at each step")
	flag.IntVar(&o.addWorkers, "add-workers", 16, "nodes added in parallel")
	flag.IntVar(&o.simWorkers, "sim-workers", 16, "reconcile workers of the simulated agents")
	flag.DurationVar(&o.settle, "settle", 60*time.Second,
		"quiet time measured after each step's nodes converged (steady-state rates)")
	flag.DurationVar(&o.convergeLimit, "converge-timeout", 30*time.Minute, "bound of each wait")
	flag.StringVar(&o.diskSize, "disk-size", "1Ti", "size of each simulated disk (/dev/ubda, /dev/ubdb)")
	flag.BoolVar(&o.unfiltered, "every-volume-group-update", false,
		"simulated agents reconcile every LVMVolumeGroup update, as before vgmanager.VolumeGroupUpdateMatters")
	flag.BoolVar(&o.atOnce, "register-at-once", false,
		"simulated agents register (their CSINode) when added, as before nodeagent.CapacityPublished held it back")
	flag.Parse()
	for s := range strings.SplitSeq(steps, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return o, fmt.Errorf("--steps: %q is not a node count", s)
		}
		if len(o.steps) > 0 && n <= o.steps[len(o.steps)-1] {
			return o, errors.New("--steps must grow")
		}
		o.steps = append(o.steps, n)
	}
	if o.stateDir == "" || o.auditLog == "" || o.provisioner == "" || o.kwok == "" || o.results == "" {
		return o, errors.New("--state-dir, --audit-log, --csi-provisioner, --kwok and --results are required")
	}
	return o, nil
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "write-audit-policy" {
		if err := os.WriteFile(os.Args[2], []byte(auditPolicy), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "scale:", err)
			os.Exit(1)
		}
		return
	}
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if err := os.MkdirAll(o.results, 0o755); err != nil {
		return fmt.Errorf("results dir: %w", err)
	}
	b, err := newBench(ctx, o)
	if err != nil {
		return err
	}
	defer b.close()
	var steps []stepResult
	for _, n := range o.steps {
		r, err := b.step(ctx, n)
		steps = append(steps, r)
		if werr := writeResults(o.results, b.info, steps); werr != nil {
			return errors.Join(err, werr)
		}
		if err != nil {
			return fmt.Errorf("step %d nodes: %w", n, err)
		}
	}
	fmt.Fprintf(os.Stdout, "results: %s\n", filepath.Join(o.results, "table.md"))
	return nil
}
