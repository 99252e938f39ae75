// Command bench-cluster measures how fast a StorageClass provisions and deletes volumes on a running
// cluster (make bench-cluster; docs/performance.md). It drives only Kubernetes objects, one
// PVC and one pod per claim, so the same run measures any CSI driver, and records with watches
// when each claim reaches each milestone: selected-node, LogicalVolume created and LV created (only
// for topolvm.io), PVC Bound, pod Running, and after deletion PV and LogicalVolume gone. It prints
// p50/p90/p99/max of every phase, each compared with the floor (one lvcreate of the same kind timed
// in the node plus an apiserver round trip), and writes result.json, table.txt and SVG plots.
// `bench-cluster compare RESULT.json...` prints the tables of several runs of one class side by
// side, e.g. lvms and TopoLVM in make bench-peer (compare.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

const (
	// benchLabel marks every object the benchmark creates with its run ID.
	benchLabel = "bench.lvms.topolvm.io/run"
)

// options are the command's flags.
type options struct {
	kubeconfig, storageClass, snapshotClass, size, volumeMode string
	namespace, operatorNamespace, image, results, runID       string
	claims, nodes, concurrency, floorSamples, profileSeconds  int
	// agentRestarts is how often the scale mode restarts the node agent at each count.
	agentRestarts                   int
	withSnapshots, floor, resources bool
	timeout, claimTimeout           time.Duration
	// logicalVolumes is set when the StorageClass's provisioner is topolvm.io (lvms or TopoLVM: both
	// keep topolvm.io/v1 LogicalVolumes); ours when that driver is lvms (--driver).
	logicalVolumes, ours bool
	// driver, driverVersion, nodeShell, floorVG and floorThinPool are addDriverFlags' flags.
	driver, driverVersion, nodeShell, floorVG, floorThinPool string
	// scaleLVs are the steps of the scale mode (--scale-lvs), none without it.
	scaleLVs []int
}

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bench-cluster", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	fs.StringVar(&o.storageClass, "storage-class", "lvms-thin", "StorageClass to measure")
	fs.StringVar(&o.snapshotClass, "snapshot-class", "", "VolumeSnapshotClass (default: the StorageClass's name)")
	fs.IntVar(&o.claims, "claims", 1, "number of claims (one PVC and one pod each)")
	fs.IntVar(&o.nodes, "nodes", 0,
		"pin pods round robin to the first N Ready nodes by required node affinity (0: the scheduler chooses)")
	fs.StringVar(&o.size, "size", "1Gi", "size of each claim")
	fs.IntVar(&o.concurrency, "concurrency", 0, "claims in flight at once (default: all)")
	fs.StringVar(&o.volumeMode, "volume-mode", string(corev1.PersistentVolumeFilesystem), "Filesystem or Block")
	fs.BoolVar(&o.withSnapshots, "with-snapshots", false, "take a VolumeSnapshot of every claim once its pod runs")
	fs.StringVar(&o.results, "results", "", "directory for result.json, table.txt and the SVG plots")
	fs.StringVar(&o.namespace, "namespace", "lvms-bench", "namespace of the claims (created if missing)")
	fs.StringVar(&o.operatorNamespace, "operator-namespace", "lvms-system", "namespace of the lvms operator")
	fs.StringVar(&o.image, "image", "lvms.local/workload:dev", "image of the pods (needs sh, sleep and trap)")
	fs.BoolVar(&o.floor, "floor", true, "measure the floor (lvcreate in the node; topolvm.io only)")
	fs.IntVar(&o.floorSamples, "floor-samples", 3, "lvcreate/lvremove pairs per node for the floor")
	fs.BoolVar(&o.resources, "resources", true, "read operator and node agent RSS and CPU before and after")
	fs.IntVar(&o.profileSeconds, "profile-seconds", 0,
		"with --resources: a CPU profile of the operator and every node agent over the first N seconds of "+
			"provisioning and a heap profile after it, into <results>/profiles (the operator must run with "+
			"--profiling: lvms-dev up --profiling; 0: none); in the scale mode, a heap profile of the operator "+
			"and the node agent at each count")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "bound of the whole run")
	fs.DurationVar(&o.claimTimeout, "claim-timeout", 10*time.Minute,
		"bound of one claim's provisioning (PVC created to pod Running) and of its deletion")
	fs.IntVar(&o.agentRestarts, "agent-restarts", 3,
		"scale mode: node agent restarts at each count; start → Ready is their mean (the API server gives both "+
			"ends in whole seconds, so one sample is off by up to a second)")
	scale := fs.String("scale-lvs", "",
		"scale mode (lvms only): grow the LVs of --storage-class's device class on one node through these "+
			"counts (e.g. 0,100,1000; LogicalVolumes of --size, no claims) and read RSS and node agent start → Ready "+
			"at each")
	addDriverFlags(fs, o)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("flags: %w", err)
	}
	if err := checkDriverFlags(o); err != nil {
		return nil, err
	}
	if *scale != "" {
		var err error
		if o.scaleLVs, err = parseScale(*scale); err != nil {
			return nil, err
		}
	}
	if o.claims < 1 {
		return nil, errors.New("--claims must be at least 1")
	}
	if o.concurrency <= 0 {
		o.concurrency = o.claims
	}
	if o.snapshotClass == "" {
		o.snapshotClass = o.storageClass
	}
	if _, err := resource.ParseQuantity(o.size); err != nil {
		return nil, fmt.Errorf("--size: %w", err)
	}
	o.runID = strconv.FormatInt(time.Now().Unix(), 36)
	return o, nil
}

func main() { os.Exit(mainCode()) }

// mainCode runs the command and returns its exit code.
func mainCode() int {
	if len(os.Args) > 1 && os.Args[1] == "compare" {
		return compareMain(os.Args[2:], os.Stdout, os.Stderr)
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runner := run
	if len(o.scaleLVs) > 0 {
		runner = runScale
	}
	if err := runner(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench-cluster:", err)
		return 1
	}
	return 0
}

// clients are the benchmark's connections to the cluster.
type clients struct {
	cs  kubernetes.Interface
	dyn dynamic.Interface
	c   client.Client
}

func connect(o *options) (*clients, *rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig: %w", err)
	}
	// Claims are created side by side: the default of 5 requests per second would be measured.
	cfg.QPS, cfg.Burst = 200, 400
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("scheme: %w", err)
	}
	if err := lvmv1alpha1.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("scheme: %w", err)
	}
	if err := topolvmv1.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("scheme: %w", err)
	}
	cl := &clients{}
	if cl.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, nil, fmt.Errorf("clientset: %w", err)
	}
	if cl.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, nil, fmt.Errorf("dynamic client: %w", err)
	}
	if cl.c, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return nil, nil, fmt.Errorf("client: %w", err)
	}
	return cl, cfg, nil
}

// prepare checks the StorageClass, creates the namespace and picks the nodes.
func prepare(ctx context.Context, cl *clients, o *options, log io.Writer) (*storagev1.StorageClass, []string, error) {
	sc, nodes, err := classNamespaceNodes(ctx, cl, o, o.nodes)
	if err != nil {
		return nil, nil, err
	}
	o.logicalVolumes = sc.Provisioner == driver.Name
	o.ours = o.logicalVolumes && o.driver == driverLvms
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		fmt.Fprintf(log, "warning: StorageClass %s is not WaitForFirstConsumer: no selected-node phase\n", sc.Name)
	}
	return sc, nodes, waitCapacity(ctx, cl.cs, sc, o, max(len(nodes), 1), log)
}

// classNamespaceNodes reads --storage-class, creates --namespace if missing and picks n Ready
// nodes (pickNodes), the setup both modes share.
func classNamespaceNodes(
	ctx context.Context,
	cl *clients,
	o *options,
	n int,
) (*storagev1.StorageClass, []string, error) {
	sc, err := cl.cs.StorageV1().StorageClasses().Get(ctx, o.storageClass, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("StorageClass %s: %w", o.storageClass, err)
	}
	_, err = cl.cs.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, nil, fmt.Errorf("namespace %s: %w", o.namespace, err)
	}
	nodes, err := pickNodes(ctx, cl.cs, n)
	if err != nil {
		return nil, nil, err
	}
	return sc, nodes, nil
}

// waitCapacity waits (setup, not measured) until the driver publishes capacity above zero for the
// class on at least n topology segments, when it tracks capacity at all: before that the scheduler
// parks the pods and the first claims would measure the driver's start-up. It warns when the
// claims a node gets do not fit the smallest capacity published (they would stay Pending).
func waitCapacity(ctx context.Context, cs kubernetes.Interface, sc *storagev1.StorageClass, o *options, n int,
	log io.Writer) error {
	drv, err := cs.StorageV1().CSIDrivers().Get(ctx, sc.Provisioner, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil // no CSIDriver object: no capacity tracking
	case err != nil:
		return fmt.Errorf("CSIDriver %s: %w", sc.Provisioner, err)
	case drv.Spec.StorageCapacity == nil || !*drv.Spec.StorageCapacity:
		return nil
	}
	var (
		seen     int
		smallest *resource.Quantity
	)
	err = wait.PollUntilContextTimeout(
		ctx,
		2*time.Second,
		5*time.Minute,
		true,
		func(ctx context.Context) (bool, error) {
			list, err := cs.StorageV1().CSIStorageCapacities("").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, fmt.Errorf("list CSIStorageCapacities: %w", err)
			}
			seen, smallest = 0, nil
			for _, c := range list.Items {
				if c.StorageClassName == sc.Name && c.Capacity != nil && c.Capacity.Sign() > 0 {
					seen++
					if smallest == nil || c.Capacity.Cmp(*smallest) < 0 {
						smallest = c.Capacity
					}
				}
			}
			return seen >= n, nil
		},
	)
	if err != nil {
		return fmt.Errorf("wait for capacity of %s on %d nodes (%d have it): %w", sc.Name, n, seen, err)
	}
	size := resource.MustParse(o.size)
	perNode := (o.claims + n - 1) / n
	need := resource.NewQuantity(size.Value()*int64(perNode), resource.BinarySI)
	fmt.Fprintf(log, "capacity of %s published on %d segments, the smallest %s; %d claims of %s per node\n",
		sc.Name, seen, smallest, perNode, o.size)
	if need.Cmp(*smallest) > 0 {
		fmt.Fprintf(log, "warning: %s of claims per node exceed the smallest capacity %s: some claims "+
			"will stay Pending (lower --size or --claims)\n", need, smallest)
	}
	return nil
}

// run is one benchmark: setup, floor, provisioning, deletion, report.
func run(ctx context.Context, o *options, stdout, log io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	cl, cfg, err := connect(o)
	if err != nil {
		return err
	}
	sc, nodes, err := prepare(ctx, cl, o, log)
	if err != nil {
		return err
	}
	rec := newRecorder(o.runID)
	wo := watchOptions{namespace: o.namespace, logicalVolumes: o.logicalVolumes, snapshots: o.withSnapshots}
	if err := rec.watch(ctx, cl.cs, cl.dyn, wo); err != nil {
		return err
	}
	r := &result{StorageClass: sc.Name, Provisioner: sc.Provisioner, Claims: o.claims, Nodes: nodes,
		Concurrency: o.concurrency, Size: o.size, VolumeMode: o.volumeMode, PerNode: map[string]int{}}
	if o.logicalVolumes {
		r.Driver, r.DriverVersion = o.driver, o.driverVersion
	}
	if o.floor && o.logicalVolumes {
		fmt.Fprintf(log, "measuring the floor on %v\n", floorNodes(ctx, cl.cs, nodes))
		p := &floorProbe{cfg: cfg, c: cl.c, cs: cl.cs, o: o}
		if r.Floor, err = p.measure(ctx, sc.Parameters, floorNodes(ctx, cl.cs, nodes)); err != nil {
			return err
		}
	}
	var res *resourceProbe
	if o.resources && o.ours {
		res = &resourceProbe{cfg: cfg, c: cl.c, cs: cl.cs, o: o}
		res.before(ctx, log)
	}
	w := &workload{cs: cl.cs, dyn: cl.dyn, rec: rec, o: o, nodes: nodes}
	r.Started = time.Now()
	prof := startProfiles(ctx, o, res, log)
	fmt.Fprintf(log, "provisioning %d claims of %s on %s\n", o.claims, o.size, sc.Name)
	if err := w.forEach(ctx, w.provision); err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
	fmt.Fprintf(log, "deleting %d claims\n", o.claims)
	if err := w.forEach(ctx, w.release); err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
	r.WallSeconds = time.Since(r.Started).Seconds()
	if prof != nil {
		prof.wait(stdout)
	}
	if res != nil {
		r.Resources = res.after(ctx, log)
	}
	return report(o, r, rec, stdout)
}

// report summarises the run, prints the table and writes the results.
func report(o *options, r *result, rec *recorder, stdout io.Writer) error {
	names := make([]string, o.claims)
	for i := range names {
		names[i] = claimName(i)
	}
	r.ClaimTimes = rec.claims(names)
	for _, c := range r.ClaimTimes {
		if _, ok := c.Milestones[mBound]; ok {
			r.Bound++
		}
		if _, ok := c.Milestones[mPodRunning]; ok {
			r.Running++
			r.PerNode[c.Node]++
		}
	}
	r.ProvisioningFailed, r.FailureMessages = rec.failures()
	floors := map[string]float64{}
	if r.Floor != nil {
		floors[floorCreate], floors[floorDelete] = r.Floor.create(), r.Floor.remove()
	}
	r.Phases = summarise(r.ClaimTimes, floors)
	if err := writeTable(stdout, r); err != nil {
		return err
	}
	if o.results != "" {
		if err := writeResults(o.results, r); err != nil {
			return err
		}
		if err := plotResults(o.results, r); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "results: %s\n", filepath.Clean(o.results))
	}
	if len(r.Errors) > 0 {
		return fmt.Errorf("%d of %d claims failed (see the errors above)", o.claims-r.Running, o.claims)
	}
	return nil
}

// floorNodes are the nodes the floor is measured on: the pinned ones, or the first Ready node.
func floorNodes(ctx context.Context, cs kubernetes.Interface, pinned []string) []string {
	if len(pinned) > 0 {
		return pinned
	}
	all, err := pickNodes(ctx, cs, 1)
	if err != nil {
		return nil
	}
	return all
}

// resourceBytes parses a quantity into bytes.
func resourceBytes(q string) (uint64, error) {
	v, err := resource.ParseQuantity(q)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", q, err)
	}
	return uint64(v.Value()), nil
}
