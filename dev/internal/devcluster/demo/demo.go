// Package demo walks a PersistentVolumeClaim through its life on the local dev cluster
// (`lvms-dev demo`, `make demo`): it brings the cluster up when needed, creates the LVMCluster,
// then provisions, writes, expands, snapshots, restores and deletes a volume on real lvm2 in the
// guest nodes, showing each effect (pod node, PV, `lvs` on the node, data, `df`) and timing each
// step. Progress goes to an io.Writer; a failure names its step and the component logs to read.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster"
)

// Options configure a demo run.
type Options struct {
	// StateDir is the dev cluster's state directory.
	StateDir string
	// Up configures `lvms-dev up` when no cluster is running; its StateDir and Out are set by Run.
	Up devcluster.UpOptions
	// Keep leaves the cluster running at the end (KEEP=1).
	Keep bool
	// Namespace receives the demo's claims, pods and snapshots.
	Namespace string
	// Sample is the LVMCluster manifest (config/samples/lvm_v1alpha1_lvmcluster.yaml).
	Sample string
	// AccessMode of the demo's claims (ReadWriteOnce when empty).
	AccessMode string
	// StepTimeout bounds each wait of the flow.
	StepTimeout time.Duration
	// Out receives progress.
	Out io.Writer
}

// step is one timed stage of the flow.
type step struct {
	name string
	// logs are the component logs (devcluster Layout.Log names, globs allowed) to read when it fails.
	logs []string
	run  func(ctx context.Context) error
}

// timing is a finished step for the summary.
type timing struct {
	name string
	took time.Duration
	err  error
}

// StepError is the failure of one step of the demo.
type StepError struct {
	// Step is the failed step's name.
	Step string
	// Logs are the component logs to look at.
	Logs []string
	// Err is the cause.
	Err error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("demo step %q failed: %v\n  look at: %s", e.Step, e.Err, strings.Join(e.Logs, ", "))
}

func (e *StepError) Unwrap() error { return e.Err }

// Run runs the whole demo and returns the first failure as a *StepError.
func Run(ctx context.Context, o Options) (err error) {
	l, err := devcluster.NewLayout(o.StateDir)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.AccessMode == "" {
		o.AccessMode = "ReadWriteOnce"
	}
	if o.StepTimeout == 0 {
		o.StepTimeout = 3 * time.Minute
	}
	d := &demo{o: o, l: l, out: o.Out}
	var timings []timing
	defer func() {
		d.summary(timings)
		if downErr := d.finish(ctx); downErr != nil {
			err = errors.Join(err, downErr)
		}
	}()
	for _, s := range d.steps() {
		fmt.Fprintf(d.out, "\n=== %s\n", s.name)
		start := time.Now()
		stepErr := s.run(ctx)
		timings = append(timings, timing{name: s.name, took: time.Since(start), err: stepErr})
		if stepErr != nil {
			return &StepError{Step: s.name, Logs: d.logPaths(s.logs), Err: stepErr}
		}
	}
	return nil
}

// demo is the state shared by the steps.
type demo struct {
	o   Options
	l   devcluster.Layout
	out io.Writer
	// startedCluster is set when this run brought the cluster up.
	startedCluster bool
	k              *kube
	// node is where the first pod ran; lvIDs are the LV names the flow created there.
	node  string
	lvIDs []string
}

const (
	claimName    = "demo-data"
	podName      = "demo-writer"
	snapshotName = "demo-snap"
	cloneName    = "demo-clone"
	clonePodName = "demo-reader"
	storageClass = "lvms-vg1"
	mountPath    = "/data"
	demoFile     = mountPath + "/hello.txt"
)

func (d *demo) steps() []step {
	provisioning := []string{"csi-provisioner", "operator", "kube-scheduler", "node-*-agent", "node-*-kubelet"}
	return []step{
		{
			fmt.Sprintf(
				"cluster up (%d nodes, %d x %d GiB disks each)",
				d.o.Up.Nodes,
				d.o.Up.Disks,
				d.o.Up.DiskSize>>30,
			),
			[]string{"supervisor", "node-*-console", "node-*-guestbridge", "node-*-containerd", "node-*-kubelet"},
			d.up,
		},
		{"LVMCluster Ready", []string{"operator", "node-*-agent"}, d.lvmCluster},
		{"PVC + pod: provision, mount, write", provisioning, d.provision},
		{
			"online expansion 1Gi -> 2Gi",
			[]string{"csi-resizer", "operator", "node-*-agent", "node-*-kubelet"},
			d.expand,
		},
		{
			"VolumeSnapshot readyToUse",
			[]string{"csi-snapshotter", "snapshot-controller", "operator", "node-*-agent"},
			d.snapshot,
		},
		{"clone from the snapshot, same data", provisioning, d.restore},
		{
			"delete pods, PVCs, snapshot: LVs removed",
			[]string{"csi-provisioner", "csi-snapshotter", "operator", "node-*-agent", "node-*-kubelet"},
			d.cleanup,
		},
	}
}

// podLogs are the kubectl commands that show the log of a component of the product, which runs
// in pods.
var podLogs = map[string]string{
	"operator":        "kubectl -n " + devcluster.Namespace + " logs deploy/lvms-operator -c operator",
	"csi-provisioner": "kubectl -n " + devcluster.Namespace + " logs deploy/lvms-operator -c csi-provisioner",
	"csi-resizer":     "kubectl -n " + devcluster.Namespace + " logs deploy/lvms-operator -c csi-resizer",
	"csi-snapshotter": "kubectl -n " + devcluster.Namespace + " logs deploy/lvms-operator -c csi-snapshotter",
	"node-*-agent":    "kubectl -n " + devcluster.Namespace + " logs -l app.kubernetes.io/name=lvms-node --prefix",
}

// logPaths expands the component names to the log files that exist, and the product's
// components to the kubectl commands that show their logs.
func (d *demo) logPaths(names []string) []string {
	var paths []string
	for _, n := range names {
		if cmd, ok := podLogs[n]; ok {
			paths = append(paths, cmd)
			continue
		}
		p := d.l.Log(n)
		if m, _ := filepath.Glob(p); len(m) > 0 {
			paths = append(paths, m...)
			continue
		}
		paths = append(paths, p)
	}
	return paths
}

// up starts the dev cluster unless one is ready already, then connects to it.
func (d *demo) up(ctx context.Context) error {
	if _, err := os.Stat(d.l.Ready()); err == nil {
		clean, err := devcluster.Status(d.l.Dir, io.Discard)
		if err != nil {
			return fmt.Errorf("status of the dev cluster in %s: %w", d.l.Dir, err)
		}
		if !clean {
			fmt.Fprintf(d.out, "a dev cluster is already up in %s: using it\n", d.l.Dir)
			return d.connect(ctx)
		}
	}
	o := d.o.Up
	o.StateDir, o.Out = d.l.Dir, d.out
	d.startedCluster = true
	if err := devcluster.Up(ctx, o); err != nil {
		return fmt.Errorf("lvms-dev up: %w", err)
	}
	return d.connect(ctx)
}

func (d *demo) connect(ctx context.Context) error {
	k, err := newKube(d.l.Kubeconfig(), d.o.Namespace, d.o.StepTimeout, d.out)
	if err != nil {
		return err
	}
	k.accessMode = corev1.PersistentVolumeAccessMode(d.o.AccessMode)
	d.k = k
	nodes, err := k.readyNodes(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "nodes Ready: %s\n", strings.Join(nodes, ", "))
	return nil
}

// finish brings the cluster down unless asked to keep it or it was running before the demo.
func (d *demo) finish(ctx context.Context) error {
	switch {
	case d.o.Keep || (!d.startedCluster && d.k != nil):
		why := "KEEP=1"
		if !d.o.Keep {
			why = "it was up before the demo"
		}
		fmt.Fprintf(
			d.out,
			"\nthe dev cluster stays up (%s):\n\n  export KUBECONFIG=%s\n  %s get nodes,lvmcluster -A\n\n"+
				"stop it with: lvms-dev down --state-dir %s\n",
			why,
			d.l.Kubeconfig(),
			d.kubectlHint(),
			d.l.Dir,
		)
		return nil
	case !d.startedCluster:
		return nil
	}
	fmt.Fprintf(d.out, "\n=== lvms-dev down\n")
	start := time.Now()
	// A canceled demo still tears the cluster down.
	if err := devcluster.Down(context.WithoutCancel(ctx), d.l.Dir, d.out); err != nil {
		return fmt.Errorf("lvms-dev down: %w", err)
	}
	fmt.Fprintf(d.out, "dev cluster down in %s\n", time.Since(start).Round(100*time.Millisecond))
	// What lvms-dev status --check-clean checks: no process, guest, listener or socket is left.
	var report strings.Builder
	clean, err := devcluster.Status(d.l.Dir, &report)
	switch {
	case err != nil:
		return fmt.Errorf("lvms-dev status: %w", err)
	case !clean:
		fmt.Fprint(d.out, report.String())
		return fmt.Errorf("something of the dev cluster is left after lvms-dev down (see above)")
	}
	fmt.Fprintf(d.out, "lvms-dev status: nothing is left of the dev cluster in %s\n", d.l.Dir)
	return nil
}

// kubectlHint is the kubectl binary of the cluster when known.
func (d *demo) kubectlHint() string {
	if d.o.Up.KubeAssets != "" {
		return filepath.Join(d.o.Up.KubeAssets, "kubectl")
	}
	if cfg, err := devcluster.ReadConfig(d.l); err == nil && cfg.KubeAssets != "" {
		return filepath.Join(cfg.KubeAssets, "kubectl")
	}
	return "kubectl"
}

func (d *demo) summary(timings []timing) {
	if len(timings) == 0 {
		return
	}
	fmt.Fprintf(d.out, "\n=== summary\n")
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "#\tstep\ttook\tresult\n")
	var total time.Duration
	for i, t := range timings {
		res := "ok"
		if t.err != nil {
			res = "FAILED"
		}
		total += t.took
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", i+1, t.name, t.took.Round(100*time.Millisecond), res)
	}
	fmt.Fprintf(tw, "\ttotal\t%s\t\n", total.Round(100*time.Millisecond))
	_ = tw.Flush()
}
