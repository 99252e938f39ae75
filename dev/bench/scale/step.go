package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/dev/internal/simnode"
)

// phase is what our components did during one part of a step.
type phase struct {
	Seconds  float64        `json:"seconds"`
	Operator usage          `json:"operator"`
	Requests []requestCount `json:"requests"`
}

// stepResult is one step's measurements.
type stepResult struct {
	Nodes int `json:"nodes"`
	// AddSeconds: creating the new nodes' objects and starting their agents.
	AddSeconds float64 `json:"addSeconds"`
	// StatusSeconds and CapacitySeconds: from the first new node until the LVMCluster status lists
	// every node Ready in every device class, and every node has a CSIStorageCapacity above zero
	// for every StorageClass.
	StatusSeconds   float64 `json:"statusSeconds"`
	CapacitySeconds float64 `json:"capacitySeconds"`
	// JoinStatusSeconds and JoinCapacitySeconds: the same for one node joining afterwards.
	JoinStatusSeconds   float64 `json:"joinStatusSeconds"`
	JoinCapacitySeconds float64 `json:"joinCapacitySeconds"`
	StatusBytes         int     `json:"lvmclusterStatusBytes"`
	State               string  `json:"lvmclusterState"`

	Claims             int     `json:"claims"`
	ClaimsSeconds      float64 `json:"claimsSeconds"`
	ClaimsPerSecond    float64 `json:"claimsPerSecond"`
	ClaimP50, ClaimP99 float64 `json:"-"`
	ProvisioningFailed int     `json:"provisioningFailed"`
	DeleteSeconds      float64 `json:"deleteSeconds"`

	StatusCommandSeconds float64 `json:"kubectlLVMSStatusSeconds"`
	StatusCommandError   string  `json:"kubectlLVMSStatusError,omitempty"`

	Join   phase `json:"join"`
	Steady phase `json:"steady"`
	Work   phase `json:"claimsPhase"`

	Fleet             simnode.Counters `json:"fleet"`
	OperatorRestarted bool             `json:"operatorExited"`
}

// step grows the cluster to n nodes and measures; see stepResult.
func (b *bench) step(ctx context.Context, n int) (stepResult, error) {
	r := stepResult{Nodes: n}
	deviceClasses, storageClasses, err := b.classes(ctx)
	if err != nil {
		return r, err
	}
	if b.tracker == nil {
		b.tracker = newTracker()
		if err := b.tracker.start(ctx, b); err != nil {
			return r, err
		}
		_, _, _ = b.audit.take() // the setup's requests are not a step's
	}
	fmt.Fprintf(os.Stdout, "step %d nodes: adding %d\n", n, n-b.nodes)
	start := time.Now()
	names := make([]string, 0, n-b.nodes)
	for i := b.nodes; i < n; i++ {
		names = append(names, fmt.Sprintf("sim-%05d", i))
	}
	if err := b.addNodes(ctx, names); err != nil {
		return r, err
	}
	r.AddSeconds = time.Since(start).Seconds()
	all := b.allNodes()
	if r.StatusSeconds, err = b.waitSeen(ctx, b.tracker.ready, all, deviceClasses, start); err != nil {
		return r, fmt.Errorf("LVMCluster status: %w", err)
	}
	if r.CapacitySeconds, err = b.waitSeen(ctx, b.tracker.capacity, all, storageClasses, start); err != nil {
		return r, fmt.Errorf("CSIStorageCapacity: %w", err)
	}
	fmt.Fprintf(os.Stdout, "step %d nodes: status %.1f s, capacity %.1f s\n", n, r.StatusSeconds, r.CapacitySeconds)
	r.Join = b.endPhase(start)
	time.Sleep(b.o.settle)
	r.Steady = b.endPhase(start.Add(time.Duration(r.Join.Seconds * float64(time.Second))))
	steadyEnd := time.Now()
	if err := b.join(ctx, n, &r, deviceClasses, storageClasses); err != nil {
		return r, err
	}
	if err := b.claims(ctx, n, storageClasses[0], &r); err != nil {
		return r, err
	}
	r.StatusCommandSeconds, r.StatusCommandError = b.statusCommand(ctx)
	r.Work = b.endPhase(steadyEnd)
	b.tracker.mu.Lock()
	r.StatusBytes, r.State = b.tracker.statusSize, string(b.tracker.state)
	b.tracker.mu.Unlock()
	r.Fleet = b.fleet.Counters()
	r.OperatorRestarted = !b.operator.alive()
	return r, nil
}

// endPhase closes a phase that began at from: the audit log's requests since the last phase and
// the operator's usage.
func (b *bench) endPhase(from time.Time) phase {
	reqs, elapsed, err := b.audit.take()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale: audit log:", err)
	}
	return phase{Seconds: elapsed.Seconds(), Operator: b.sampler.window(from, time.Now()), Requests: reqs}
}

// classes returns the LVMCluster's device classes and their StorageClasses.
func (b *bench) classes(ctx context.Context) (dcs, scs []string, err error) {
	var list lvmv1alpha1.LVMClusterList
	if err := b.admin.List(ctx, &list, client.InNamespace(b.o.namespace)); err != nil || len(list.Items) != 1 {
		return nil, nil, fmt.Errorf("the one LVMCluster: %d found: %w", len(list.Items), err)
	}
	for _, dc := range list.Items[0].Spec.Storage.DeviceClasses {
		dcs, scs = append(dcs, dc.Name), append(scs, "lvms-"+dc.Name)
	}
	return dcs, scs, nil
}

// addNodes adds nodes with o.addWorkers in parallel.
func (b *bench) addNodes(ctx context.Context, names []string) error {
	work := make(chan string)
	errs := make(chan error, b.o.addWorkers)
	var wg sync.WaitGroup
	for range b.o.addWorkers {
		wg.Go(func() {
			for name := range work {
				if err := b.fleet.AddNode(ctx, name); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for _, name := range names {
		select {
		case work <- name:
		case err = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil && len(errs) > 0 {
		err = <-errs
	}
	b.nodes += len(names)
	b.names = append(b.names, names...)
	return err
}

func (b *bench) allNodes() []string { return slices.Clone(b.names) }

// waitSeen waits until every node was seen for every key of m and returns the seconds from start
// to the last of them.
func (b *bench) waitSeen(ctx context.Context, m map[string]map[string]time.Time, nodes, keys []string,
	start time.Time,
) (float64, error) {
	var latest time.Time
	err := waitFor(ctx, b.o.convergeLimit, func() (bool, error) {
		var ok bool
		latest, ok = b.tracker.allSeen(m, nodes, keys)
		return ok, nil
	})
	return latest.Sub(start).Seconds(), err
}

// join adds one node to the converged cluster and times its status and capacity.
func (b *bench) join(ctx context.Context, n int, r *stepResult, dcs, scs []string) error {
	name := fmt.Sprintf("sim-join-%05d", n)
	start := time.Now()
	if err := b.fleet.AddNode(ctx, name); err != nil {
		return err
	}
	b.nodes++
	b.names = append(b.names, name)
	var err error
	if r.JoinStatusSeconds, err = b.waitSeen(ctx, b.tracker.ready, []string{name}, dcs, start); err != nil {
		return fmt.Errorf("joining node's status: %w", err)
	}
	if r.JoinCapacitySeconds, err = b.waitSeen(ctx, b.tracker.capacity, []string{name}, scs, start); err != nil {
		return fmt.Errorf("joining node's capacity: %w", err)
	}
	fmt.Fprintf(os.Stdout, "step %d nodes: a joining node's status %.1f s, capacity %.1f s\n", n, r.JoinStatusSeconds,
		r.JoinCapacitySeconds)
	return nil
}

// claims provisions o.claims claims of class sc, each used by a pod, then deletes them and waits
// until their LogicalVolumes are gone.
func (b *bench) claims(ctx context.Context, n int, sc string, r *stepResult) error {
	ns := fmt.Sprintf("scale-%d", n)
	if err := b.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	start := time.Now()
	names := make([]string, 0, b.o.claims)
	for i := range b.o.claims {
		name := fmt.Sprintf("c-%04d", i)
		if err := b.admin.Create(ctx, claim(ns, name, sc)); err != nil {
			return fmt.Errorf("create claim %s: %w", name, err)
		}
		if err := b.admin.Create(ctx, claimPod(ns, name)); err != nil {
			return fmt.Errorf("create pod %s: %w", name, err)
		}
		names = append(names, ns+"/"+name)
	}
	var bound []time.Time
	if err := waitFor(ctx, b.o.convergeLimit, func() (bool, error) {
		var ok bool
		bound, ok = b.tracker.boundAt(names)
		return ok, nil
	}); err != nil {
		return fmt.Errorf("claims Bound: %w", err)
	}
	r.Claims = len(names)
	secs := make([]float64, len(bound))
	for i, at := range bound {
		secs[i] = at.Sub(start).Seconds()
	}
	slices.Sort(secs)
	r.ClaimsSeconds = secs[len(secs)-1]
	r.ClaimsPerSecond = float64(len(secs)) / r.ClaimsSeconds
	r.ClaimP50, r.ClaimP99 = secs[len(secs)/2], secs[(len(secs)*99)/100]
	var events corev1.EventList
	if err := b.admin.List(ctx, &events, client.InNamespace(ns)); err == nil {
		for _, e := range events.Items {
			if e.Reason == "ProvisioningFailed" {
				r.ProvisioningFailed += int(max(e.Count, 1))
			}
		}
	}
	fmt.Fprintf(
		os.Stdout,
		"step %d nodes: %d claims Bound in %.1f s (%.1f/s)\n",
		n,
		r.Claims,
		r.ClaimsSeconds,
		r.ClaimsPerSecond,
	)
	del := time.Now()
	if err := b.admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	if err := waitFor(ctx, b.o.convergeLimit, func() (bool, error) {
		var lvs topolvmv1.LogicalVolumeList
		err := b.admin.List(ctx, &lvs)
		return err == nil && len(lvs.Items) == 0, err
	}); err != nil {
		return fmt.Errorf("LogicalVolumes removed: %w", err)
	}
	r.DeleteSeconds = time.Since(del).Seconds()
	return nil
}

func claim(ns, name, sc string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &sc,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			},
		},
	}
}

// claimPod uses the claim on a kwok node (kwok reports it Running; nothing runs).
func claimPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"type": "kwok"},
			Containers:   []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
			}}},
		},
	}
}

// statusCommand times `kubectl lvms status`.
func (b *bench) statusCommand(ctx context.Context) (float64, string) {
	cmd := exec.CommandContext(ctx, b.o.kubectlLVMS, "status")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(b.o.stateDir, "kubeconfig"))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	secs := time.Since(start).Seconds()
	_ = os.WriteFile(filepath.Join(b.logs, fmt.Sprintf("kubectl-lvms-status-%d.txt", b.nodes)), out, 0o644)
	if err != nil {
		return secs, err.Error()
	}
	return secs, ""
}
