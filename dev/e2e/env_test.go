//go:build e2e

// Package e2e tests the storage flows a user relies on against the running dev cluster
// (`lvms-dev up`, KUBECONFIG pointing at it): placement by capacity, thick and thin device classes,
// ext4, xfs and block volumes, expansion, snapshot and restore, clone, generic ephemeral volumes,
// ReadWriteOncePod, deletion, a node agent killed mid-provisioning, and the LVMCluster's teardown.
// hack/e2e.sh (make e2e) brings the cluster up, runs the suite and tears the cluster down;
// docs/e2e.md lists what each test shows.
package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/demo"
)

const (
	operatorNS = "lvms-system"
	// thickClass uses /dev/ubdb and /dev/ubdc of every node (2 x 8 GiB), thinClass /dev/ubda.
	thickClass = "lvms-thick"
	thinClass  = "lvms-thin"
	// mobileClass (thin, ext4) and mobileSize are the claims whose data the mobility tests copy
	// between nodes (env.mobileStorageClass). Not lvms-thin's xfs: mkfs.xfs makes nothing below
	// 300 MiB and writes a 64 MiB log, so each copy would move at least 64 MiB between the local
	// cluster's single-CPU nodes (a few MB/s; over the serial-line relay used until 9861e0c, 1Gi
	// xfs claims kept a node's one CPU busy for minutes and, in CI at 144c409, cost it the API
	// server).
	// The copy is of blocks, whatever the filesystem: small ext4 moves about 5 MiB besides the data.
	mobileClass = "e2e-thin-ext4-mobile"
	mobileSize  = "64Mi"
	mountPath   = "/data"
	// timeout bounds the suite's waits for pods, claims and snapshots. It was 4 min. With nothing
	// else on the host (b041dfc, 2026-11-29) the scheduler put every flow's pod on the node without
	// the operator: VolumeModes' writer had its seven volumes mounted 100 s before the bound and
	// had not finished at it, and EncryptedVolume's luksFormat (argon2id, benchmarked on a busy
	// single-CPU guest) outlasted it. In make test at a3bc7e6 a plain claim waited over 80 s while
	// the agents removed earlier tests' volumes.
	timeout = 8 * time.Minute
	// readyTimeout bounds the wait for the LVMCluster: a single-CPU node builds its three volume
	// groups one after the other, 20-120 s each (about 4.5 min in all, measured; 6 min 14 s at
	// 88b5e1a, after the node agents took a minute to start, which failed the first test at 6 min).
	// In make test at e117935 (2026-11-30) node-1, which also ran the operator, built its three 40 s
	// to 3 min apart, and the LVMCluster was Ready 13 min after it was made.
	readyTimeout = 20 * time.Minute
	// workloadImage is the test pods' image (busybox), imported into every node.
	workloadImage = "lvms.local/workload:dev"
	// outputLines is how much of a pod's log the tests read.
	outputLines = 50
	// execTimeout bounds one command run in a node agent's container. An exec into a UML node
	// took 10 to 66 s on an otherwise idle host (2026-11-29), and CI timed out at 2 min.
	execTimeout = 5 * time.Minute
)

// The suite's client logs nothing of its own; failures are reported through t.
func init() { ctrllog.SetLogger(logr.Discard()) }

// env is one test's access to the cluster, in a namespace of its own.
type env struct {
	t   *testing.T
	c   client.Client
	cs  kubernetes.Interface
	cfg *rest.Config
	ns  string
	// extender leaves the namespace open to the pod webhook of the scheduler extender (only
	// TestSchedulerExtender's).
	extender bool
}

// newEnv connects, makes sure the e2e LVMCluster is Ready and creates a namespace for the test,
// deleted at its end.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := connect(t)
	e.ensureLVMCluster()
	e.createNamespace()
	return e
}

// connect returns the test's access to the cluster, changing nothing: no LVMCluster, no namespace
// (TestKubectlLVMSPlan creates the LVMCluster itself).
func connect(t *testing.T) *env {
	t.Helper()
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("KUBECONFIG is not set: run hack/e2e.sh")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, lvmv1alpha1.AddToScheme, topolvmv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return &env{t: t, c: c, cs: cs, cfg: cfg, ns: "e2e-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))}
}

// createNamespace creates the test's namespace, whose content is deleted at the test's end.
func (e *env) createNamespace() {
	e.t.Helper()
	// A namespace of an earlier run on a kept cluster may still be terminating: wait it out.
	e.waitFor("namespace "+e.ns, func(ctx context.Context) (bool, string, error) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}
		if !e.extender {
			ns.Labels = map[string]string{webhookOptOutLabel: "ignore"}
		}
		err := e.c.Create(ctx, ns)
		if apierrors.IsAlreadyExists(err) {
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(ns), ns); err != nil {
				return false, "", client.IgnoreNotFound(err)
			}
			return ns.DeletionTimestamp == nil, "namespace terminating", nil
		}
		return err == nil, "", err
	})
	e.t.Cleanup(e.deleteNamespaceContent)
}

func (e *env) ctx() context.Context { return e.t.Context() }

// e2eLVMCluster is the suite's LVMCluster: a thick and a thin device class on separate disks, and the
// small thin one of TestNoDataAcrossTenants.
func e2eLVMCluster() *lvmv1alpha1.LVMCluster {
	return &lvmv1alpha1.LVMCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e", Namespace: operatorNS},
		Spec: lvmv1alpha1.LVMClusterSpec{Storage: lvmv1alpha1.Storage{DeviceClasses: []lvmv1alpha1.DeviceClass{
			{Name: "thick", FilesystemType: lvmv1alpha1.FilesystemTypeExt4,
				DeviceSelector: &lvmv1alpha1.DeviceSelector{Paths: []lvmv1alpha1.DevicePath{"/dev/ubdb", "/dev/ubdc"}}},
			{
				Name:           "thin",
				Default:        true,
				FilesystemType: lvmv1alpha1.FilesystemTypeXFS,
				DeviceSelector: &lvmv1alpha1.DeviceSelector{Paths: []lvmv1alpha1.DevicePath{"/dev/ubda"}},
				ThinPoolConfig: &lvmv1alpha1.ThinPoolConfig{
					Name:               "thin-pool-1",
					SizePercent:        90,
					OverprovisionRatio: 10,
				},
			},
			// TestNoDataAcrossTenants's own class (tenants_test.go).
			{
				Name:           tenantThinVG,
				DeviceSelector: &lvmv1alpha1.DeviceSelector{Paths: []lvmv1alpha1.DevicePath{"/dev/ubdd"}},
				ThinPoolConfig: &lvmv1alpha1.ThinPoolConfig{
					Name:                       tenantPool,
					SizePercent:                10,
					OverprovisionRatio:         2,
					ChunkSizeCalculationPolicy: lvmv1alpha1.ChunkSizeCalculationPolicyStatic,
					ChunkSize:                  new(resource.MustParse("8Mi")),
				},
			},
		}}},
	}
}

// ensureLVMCluster creates the e2e LVMCluster (e2eLVMCluster) unless it exists, and waits until it is
// Ready.
func (e *env) ensureLVMCluster() {
	e.t.Helper()
	want := e2eLVMCluster()
	var all lvmv1alpha1.LVMClusterList
	if err := e.c.List(e.ctx(), &all, client.InNamespace(operatorNS)); err != nil {
		e.t.Fatalf("list LVMClusters: %v", err)
	}
	for _, c := range all.Items {
		if c.Name != want.Name {
			e.t.Fatalf(
				"LVMCluster %s exists; the suite needs its own (thick on /dev/ubdb,/dev/ubdc, thin on /dev/ubda, tenant-thin on /dev/ubdd): run it on a fresh cluster (hack/e2e.sh)",
				c.Name,
			)
		}
	}
	var got lvmv1alpha1.LVMCluster
	err := e.c.Get(e.ctx(), client.ObjectKeyFromObject(want), &got)
	if apierrors.IsNotFound(err) {
		// Tests running side by side may race to create it.
		if err = e.c.Create(e.ctx(), want); apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		e.t.Fatalf("LVMCluster e2e: %v", err)
	}
	e.waitForReady()
}

// waitForReady waits until the LVMCluster e2e is Ready.
func (e *env) waitForReady() {
	e.t.Helper()
	want := e2eLVMCluster()
	var got lvmv1alpha1.LVMCluster
	e.waitForWithin(readyTimeout, "LVMCluster e2e Ready", func(ctx context.Context) (bool, string, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(want), &got); err != nil {
			return false, "", err
		}
		return got.Status.State == lvmv1alpha1.LVMStatusReady, fmt.Sprintf("state %q", got.Status.State), nil
	})
	// make test starts its host lane once the LVMCluster is Ready (hack/test.sh): until then the node
	// agents start and build the volume groups on the UML nodes, which the host lane's load starves.
	if f := os.Getenv("E2E_READY_FILE"); f != "" {
		_ = os.WriteFile(f, []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644)
	}
}

// waitFor polls cond until done; a timeout fails the test with the last thing cond saw.
func (e *env) waitFor(what string, cond func(ctx context.Context) (bool, string, error)) {
	e.t.Helper()
	e.waitForWithin(timeout, what, cond)
}

// waitForWithin is waitFor with a timeout of its own.
func (e *env) waitForWithin(d time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx(), time.Second, d, true, func(ctx context.Context) (bool, error) {
		done, saw, err := cond(ctx)
		if saw != "" {
			last = saw
		}
		return done, err
	})
	if err != nil {
		e.t.Fatalf("wait for %s (last seen: %s): %v", what, last, err)
	}
}

// onFailure calls f if the test has failed; deferred, it adds what f logs to a failure's report.
func (e *env) onFailure(f func()) {
	if e.t.Failed() {
		f()
	}
}

// linesMatching keeps the lines of s that match the regular expression re.
func linesMatching(s, re string) string {
	r := regexp.MustCompile(re)
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if r.MatchString(l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// deleteNamespaceContent deletes the test's pods and claims and waits until their LVs are gone.
func (e *env) deleteNamespaceContent() {
	ctx := context.Background()
	_ = e.c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(e.ns))
	_ = e.c.DeleteAllOf(ctx, &corev1.PersistentVolumeClaim{}, client.InNamespace(e.ns))
	_ = e.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}})
}

// claim creates a ReadWriteOnce PVC; block makes it volumeMode Block; snapshot restores it from a
// VolumeSnapshot.
func (e *env) claim(name, class, size string, block bool, snapshot string) {
	e.t.Helper()
	pvc := newClaim(name, class, size)
	if block {
		pvc.Spec.VolumeMode = new(corev1.PersistentVolumeBlock)
	}
	if snapshot != "" {
		pvc.Spec.DataSourceRef = &corev1.TypedObjectReference{
			APIGroup: new("snapshot.storage.k8s.io"),
			Kind:     "VolumeSnapshot",
			Name:     snapshot,
		}
	}
	e.create(pvc)
}

// newClaim is a ReadWriteOnce Filesystem PVC of size in class.
func newClaim(name, class, size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: new(class),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

// create creates the namespaced obj in the test's namespace.
func (e *env) create(obj client.Object) {
	e.t.Helper()
	obj.SetNamespace(e.ns)
	if err := e.c.Create(e.ctx(), obj); err != nil {
		e.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// pod runs script with the claim at mountPath (or, for a block claim, at /dev/xvda); onNode asks
// the scheduler for a node.
func (e *env) pod(name, claim string, block bool, onNode, script string) {
	e.t.Helper()
	pod := newPod(name, script)
	if block {
		useClaim(pod, claim, "", "/dev/xvda")
	} else {
		useClaim(pod, claim, mountPath, "")
	}
	if onNode != "" {
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: onNode}
	}
	e.create(pod)
}

// useClaim adds claim to the pod's volumes (named after the claim) and mounts it at dir, or for a
// block claim (dir "") exposes it at device.
func useClaim(pod *corev1.Pod, claim, dir, device string) {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	c := &pod.Spec.Containers[0]
	if dir == "" {
		c.VolumeDevices = append(c.VolumeDevices, corev1.VolumeDevice{Name: claim, DevicePath: device})
		return
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: claim, MountPath: dir})
}

// newPod is a pod that runs script once in the workload image.
func newPod(name, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: new(int64(2)),
			Containers: []corev1.Container{{Name: "main", Image: workloadImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", script}}},
		},
	}
}

// hostPod is a privileged hostPID pod that runs script on node in the node's own mount
// namespace (PID 1's), with every process of the node visible: its lvm2 commands, its node agent.
func hostPod(name, node, script string) *corev1.Pod {
	pod := newPod(name, script)
	pod.Spec.NodeName = node
	pod.Spec.HostPID = true
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: new(true)}
	pod.Spec.Containers[0].Command = []string{
		"/bin/busybox",
		"nsenter",
		"--target=1",
		"--mount",
		"--",
		"/bin/sh",
		"-c",
		script,
	}
	return pod
}

// finished waits until the pod Succeeded and returns it with its output.
func (e *env) finished(name string) (*corev1.Pod, string) {
	e.t.Helper()
	var pod corev1.Pod
	e.waitFor("pod "+name+" Succeeded", func(ctx context.Context) (bool, string, error) {
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &pod); err != nil {
			return false, "", err
		}
		if pod.Status.Phase == corev1.PodFailed {
			return false, "", fmt.Errorf("pod %s failed: %s", name, e.output(&pod))
		}
		return pod.Status.Phase == corev1.PodSucceeded, fmt.Sprintf(
			"phase %s: %s",
			pod.Status.Phase,
			pod.Status.Message,
		), nil
	})
	return &pod, e.output(&pod)
}

// output is the pod's output: the last outputLines of its log (the pods/log API, which the
// apiserver fetches from the kubelet).
func (e *env) output(pod *corev1.Pod) string {
	b, err := e.cs.CoreV1().Pods(
		pod.Namespace,
	).GetLogs(
		pod.Name,
		&corev1.PodLogOptions{TailLines: new(int64(outputLines))},
	).DoRaw(
		e.ctx(),
	)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

// volumeOf waits until the claim is Bound and returns its PV and LogicalVolume.
func (e *env) volumeOf(claim string) (*corev1.PersistentVolume, *topolvmv1.LogicalVolume) {
	e.t.Helper()
	var pvc corev1.PersistentVolumeClaim
	e.waitFor("PVC "+claim+" Bound", func(ctx context.Context) (bool, string, error) {
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: claim}, &pvc); err != nil {
			return false, "", err
		}
		return pvc.Status.Phase == corev1.ClaimBound, string(pvc.Status.Phase), nil
	})
	var pv corev1.PersistentVolume
	if err := e.c.Get(e.ctx(), client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv); err != nil {
		e.t.Fatalf("get PV %s: %v", pvc.Spec.VolumeName, err)
	}
	var lvs topolvmv1.LogicalVolumeList
	if err := e.c.List(e.ctx(), &lvs); err != nil {
		e.t.Fatalf("list LogicalVolumes: %v", err)
	}
	i := slices.IndexFunc(
		lvs.Items,
		func(lv topolvmv1.LogicalVolume) bool { return lv.Status.VolumeID == pv.Spec.CSI.VolumeHandle },
	)
	if i < 0 {
		e.t.Fatalf("no LogicalVolume for PV %s (handle %s)", pv.Name, pv.Spec.CSI.VolumeHandle)
	}
	return &pv, &lvs.Items[i]
}

// lvs runs lvs on node (in the node agent's container) and returns its output.
func (e *env) lvs(node string) string {
	e.t.Helper()
	return e.onAgent(node, "lvs --noheadings -o lv_name,vg_name,lv_size,lv_attr")
}

// onAgent runs script on node in the node agent's container (demo.AgentExec: kubectl exec and
// nsenter into the node), as an admin looks at a node; checks after the LVMCluster is gone, when
// there is no agent, use onNode.
func (e *env) onAgent(node, script string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx(), execTimeout)
	defer cancel()
	out, err := demo.AgentExec(ctx, e.cfg, e.c, e.cs, operatorNS, node, script)
	if err != nil {
		e.t.Fatalf("%v\n%s", err, out)
	}
	return out
}

// onNode runs script on node in a privileged hostPID pod of its own and returns its output: for
// nodes without a node agent (onAgent is cheaper where there is one).
func (e *env) onNode(node, name, script string) string {
	e.t.Helper()
	e.create(hostPod(name, node, script))
	_, out := e.finished(name)
	return out
}
