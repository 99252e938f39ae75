//go:build e2e

package e2e

// The chaos test: claims of every kind are provisioned, expanded, snapshotted, restored and deleted
// while a seeded random schedule of faults kills the operator, a node agent, kube-apiserver or etcd
// with SIGKILL. Afterwards every claim still wanted is Bound with its pod Running on its data, and
// once everything is deleted no LogicalVolume, PV or LV of ours is left. The schedule and a table of
// the invariants are printed; CHAOS_SEED repeats a run. The full e2e set runs it with a fixed seed and
// 4 faults over 4 claims, after the flows and before the teardown (files sort so); make chaos runs
// it alone with a new seed, 8 faults and 8 claims (CHAOS_SEED, CHAOS_FAULTS, CHAOS_CLAIMS).

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/demo"
)

// chaosTimeout bounds every wait of the chaos test: a fault costs the cluster up to a minute or
// two (an apiserver restart, the agent's restart backoff, leader election).
const chaosTimeout = 8 * time.Minute

// Fault kinds.
const (
	faultOperator  = "operator"
	faultAgent     = "node-agent"
	faultAPIServer = "kube-apiserver"
	faultEtcd      = "etcd"
)

// fault is one entry of the schedule: after waiting gap, kill kind (on node, for an agent).
type fault struct {
	gap        time.Duration
	kind, node string
	// done is what happened, filled in when the fault ran.
	done string
}

// chaosPlan is the seeded schedule of faults and the claims' operations.
type chaosPlan struct {
	seed   uint64
	faults []fault
	ops    []string
	// starts is when each claim's operation begins, spread over the faults' window.
	starts []time.Duration
}

// Operations of a claim.
const (
	opProvision = "provision"
	opExpand    = "expand"
	opSnapshot  = "snapshot+restore"
	opDelete    = "delete"
)

// newChaosPlan draws the schedule from seed: faults kills spread with gaps of 5-35 s, and claims
// operations in a shuffled order that has each kind at least once, each starting at a random
// moment of the faults' window so that faults hit them midway.
func newChaosPlan(seed uint64, faults, claims int, nodes []string) chaosPlan {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	p := chaosPlan{seed: seed}
	kinds := []string{faultOperator, faultAgent, faultAPIServer, faultEtcd}
	for i := range faults {
		f := fault{gap: time.Duration(5+rng.IntN(31)) * time.Second, kind: kinds[rng.IntN(len(kinds))]}
		if i < len(kinds) {
			f.kind = kinds[i] // every kind at least once
		}
		if f.kind == faultAgent {
			f.node = nodes[rng.IntN(len(nodes))]
		}
		p.faults = append(p.faults, f)
	}
	rng.Shuffle(len(p.faults), func(i, j int) { p.faults[i], p.faults[j] = p.faults[j], p.faults[i] })
	all := []string{opProvision, opExpand, opSnapshot, opDelete}
	for i := range claims {
		p.ops = append(p.ops, all[i%len(all)])
	}
	rng.Shuffle(len(p.ops), func(i, j int) { p.ops[i], p.ops[j] = p.ops[j], p.ops[i] })
	var window time.Duration
	for _, f := range p.faults {
		window += f.gap
	}
	for range p.ops {
		p.starts = append(p.starts, time.Duration(rng.Int64N(int64(window/time.Second)+1))*time.Second)
	}
	return p
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// defaultChaosSeed is the e2e suite's schedule (make chaos draws a new one).
const defaultChaosSeed = 20261128

// TestChaos is the chaos test (CHAOS_SEED, CHAOS_FAULTS, CHAOS_CLAIMS).
func TestChaos(t *testing.T) {
	fullSetOnly(t, "seeded SIGKILLs of the operator, agents, kube-apiserver and etcd while claims change "+
		"(make chaos runs it alone)")
	seed := uint64(defaultChaosSeed)
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", v, err)
		}
	}
	e := newEnv(t)
	nodes := e.nodes()
	plan := newChaosPlan(seed, envInt(t, "CHAOS_FAULTS", 4), envInt(t, "CHAOS_CLAIMS", 4), nodes)
	t.Logf("chaos seed %d (CHAOS_SEED=%d repeats this schedule):", plan.seed, plan.seed)
	for i, f := range plan.faults {
		t.Logf("  fault %d: after %s kill -9 %s %s", i+1, f.gap, f.kind, f.node)
	}
	for i, op := range plan.ops {
		t.Logf("  claim c%02d (%s): %s, starting after %s", i, chaosClass(i, op), op, plan.starts[i])
	}
	killers := map[string]*corev1.Pod{}
	for _, node := range nodes {
		e.create(hostPod("chaos-"+node, node, "sleep 100000"))
		killers[node] = e.running("chaos-" + node)
	}
	ch := &chaos{e: e, killers: killers}
	for i, op := range plan.ops {
		ch.results = append(ch.results, claimResult{name: fmt.Sprintf("c%02d", i), class: chaosClass(i, op), op: op})
	}
	// The faults run beside the claims' subtests, in a goroutine of their own so that they do not
	// wait for a slot of -test.parallel; their errors are reported once the load is done.
	injected := make(chan error, 1)
	go func() { injected <- ch.inject(t, plan.faults) }()
	t.Run("load", func(t *testing.T) {
		for i, op := range plan.ops {
			t.Run(fmt.Sprintf("c%02d-%s", i, op), func(t *testing.T) {
				t.Parallel()
				time.Sleep(plan.starts[i])
				ch.run(ch.e.sub(t), i, op)
				ch.results[i].ok = true
			})
		}
	})
	if err := <-injected; err != nil {
		t.Error(err)
	}
	t.Log("faults as they ran:")
	for i, f := range plan.faults {
		t.Logf("  fault %d: %s %s: %s", i+1, f.kind, f.node, f.done)
	}
	ch.verify(t, plan)
}

// chaosClass is the class claim i uses: snapshots need thin; the others alternate.
func chaosClass(i int, op string) string {
	if op == opSnapshot || i%2 == 0 {
		return thinClass
	}
	return thickClass
}

type chaos struct {
	e       *env
	killers map[string]*corev1.Pod
	// results has one entry per claim; its subtest sets ok when the operation succeeded.
	results []claimResult
}

// claimResult is what a claim's operation saw.
type claimResult struct {
	name, class, op string
	// ok is set when the operation succeeded (a failed subtest says how it failed).
	ok bool
}

// eventually polls cond like waitFor, but takes errors for "not yet": under chaos the API server
// comes and goes. The last error or observation is in the failure.
func (e *env) eventually(what string, cond func(ctx context.Context) (bool, string, error)) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx(), chaosTimeout)
	defer cancel()
	var last string
	for {
		done, saw, err := cond(ctx)
		switch {
		case err != nil:
			last = err.Error()
		case saw != "":
			last = saw
		}
		if done && err == nil {
			return
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("wait for %s (last seen: %s): %v", what, last, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// apply retries fn (a create, patch or delete) until it succeeds or already happened.
func (e *env) apply(what string, fn func(ctx context.Context) error) {
	e.t.Helper()
	e.eventually(what, func(ctx context.Context) (bool, string, error) {
		err := fn(ctx)
		if err != nil &&
			(strings.Contains(err.Error(), "already exists") || strings.Contains(err.Error(), "not found")) {
			err = nil
		}
		return err == nil, "", err
	})
}

// inject runs the schedule: a SIGKILL of the component after each gap, each tried until it
// succeeds or chaosTimeout passes. It logs, but never fails the test: it runs in a goroutine.
func (ch *chaos) inject(t *testing.T, faults []fault) error {
	for i := range faults {
		f := &faults[i]
		time.Sleep(f.gap)
		ctx, cancel := context.WithTimeout(t.Context(), chaosTimeout)
		out, err := ch.kill(ctx, f)
		for err != nil && ctx.Err() == nil {
			time.Sleep(2 * time.Second)
			out, err = ch.kill(ctx, f)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("fault %d, kill -9 %s %s: %w (%s)", i+1, f.kind, f.node, err, out)
		}
		f.done = fmt.Sprintf("%s %s", time.Now().Format(time.TimeOnly), strings.TrimSpace(out))
		t.Logf("fault %d: kill -9 %s %s: %s", i+1, f.kind, f.node, f.done)
	}
	return nil
}

// kill sends SIGKILL: to kube-apiserver or etcd on this host (the dev cluster's supervisor starts
// them again, as a kubelet restarts static pods), to the operator or a node agent on its node
// through a privileged hostPID pod there (the kubelet restarts the container).
func (ch *chaos) kill(ctx context.Context, f *fault) (string, error) {
	switch f.kind {
	case faultAPIServer, faultEtcd:
		state := os.Getenv("CHAOS_STATE_DIR")
		if state == "" {
			state = filepath.Dir(os.Getenv("KUBECONFIG"))
		}
		b, err := os.ReadFile(filepath.Join(state, "run", f.kind+".pid"))
		if err != nil {
			return "", err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return "", fmt.Errorf("pid file of %s: %w", f.kind, err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return "", fmt.Errorf("kill %s (pid %d): %w", f.kind, pid, err)
		}
		return fmt.Sprintf("killed pid %d", pid), nil
	case faultOperator:
		var pods corev1.PodList
		if err := ch.e.c.List(ctx, &pods, client.InNamespace(operatorNS),
			client.MatchingLabels{"app.kubernetes.io/name": "lvms-operator"}); err != nil {
			return "", err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
				return ch.pkill(ctx, p.Spec.NodeName, "[l]vms operator")
			}
		}
		return "", fmt.Errorf("no running operator pod among %d", len(pods.Items))
	default:
		return ch.pkill(ctx, f.node, "[l]vms node")
	}
}

// pkill kills the processes matching pattern on node.
func (ch *chaos) pkill(ctx context.Context, node, pattern string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	script := fmt.Sprintf(
		`pids=$(pgrep -f '%s'); [ -n "$pids" ] || exit 3; kill -9 $pids; echo "killed pids" $pids on %s`,
		pattern,
		node,
	)
	// The killer pod's process entered the node's mount namespace (hostPod), and an exec joins
	// it there: this is the node's shell and pgrep.
	return demo.PodExec(ctx, ch.e.cfg, ch.e.cs, ch.killers[node], "main", "/bin/sh", "-c", script)
}

// chaosPodScript writes the claim's own token (or, with check, only reads it), prints it and
// stays Running.
func chaosPodScript(token string, check bool) string {
	write := fmt.Sprintf("echo %s > /data/f; sync; ", token)
	if check {
		write = ""
	}
	return write + `echo "read=$(cat /data/f)"; exec sleep 100000`
}

// run performs claim i's operation; a failure fails its subtest (and ends it).
func (ch *chaos) run(e *env, i int, op string) {
	res := ch.results[i]
	token := fmt.Sprintf("chaos-%02d", i)
	e.applyClaim(res.name, res.class, "")
	e.applyPod(res.name, res.name, chaosPodScript(token, false))
	e.podSays(res.name, "read="+token)
	switch op {
	case opExpand:
		e.expand(res.name, "2Gi")
	case opSnapshot:
		snap := res.name + "-snap"
		e.apply("VolumeSnapshot "+snap, func(ctx context.Context) error {
			return e.c.Create(ctx, demo.NewSnapshot(e.ns, snap, thinClass, res.name))
		})
		e.eventually("VolumeSnapshot "+snap+" readyToUse", func(ctx context.Context) (bool, string, error) {
			s := demo.NewSnapshot(e.ns, snap, thinClass, res.name)
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
				return false, "", err
			}
			ready, _, _ := unstructured.NestedBool(s.Object, "status", "readyToUse")
			return ready, fmt.Sprint(s.Object["status"]), nil
		})
		restored := res.name + "-restored"
		e.applyClaim(restored, thinClass, snap)
		e.applyPod(restored, restored, chaosPodScript(token, true))
		e.podSays(restored, "read="+token)
	case opDelete:
		e.deleteClaim(res.name)
	}
}

func (e *env) applyClaim(name, class, snapshot string) {
	e.t.Helper()
	pvc := newClaim(name, class, "1Gi")
	pvc.Namespace = e.ns
	if snapshot != "" {
		pvc.Spec.DataSourceRef = &corev1.TypedObjectReference{
			APIGroup: new("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot", Name: snapshot}
	}
	e.apply("PVC "+name, func(ctx context.Context) error { return e.c.Create(ctx, pvc.DeepCopy()) })
}

func (e *env) applyPod(name, claim, script string) {
	e.t.Helper()
	pod := newPod(name, script)
	pod.Namespace = e.ns
	useClaim(pod, claim, mountPath, "")
	e.apply("pod "+name, func(ctx context.Context) error { return e.c.Create(ctx, pod.DeepCopy()) })
}

// podSays waits until the pod runs and its log holds want.
func (e *env) podSays(name, want string) {
	e.t.Helper()
	e.eventually("pod "+name+" Running and saying "+want, func(ctx context.Context) (bool, string, error) {
		var pod corev1.Pod
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &pod); err != nil {
			return false, "", err
		}
		if pod.Status.Phase != corev1.PodRunning {
			return false, string(pod.Status.Phase), nil
		}
		out := e.output(&pod)
		return strings.Contains(out, want), out, nil
	})
}

// expand grows the claim and waits until its status says so.
func (e *env) expand(name, size string) {
	e.t.Helper()
	want := resource.MustParse(size)
	e.apply("expand PVC "+name, func(ctx context.Context) error {
		var pvc corev1.PersistentVolumeClaim
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &pvc); err != nil {
			return err
		}
		patch := client.MergeFrom(pvc.DeepCopy())
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = want
		return e.c.Patch(ctx, &pvc, patch)
	})
	e.eventually("PVC "+name+" capacity "+size, func(ctx context.Context) (bool, string, error) {
		var pvc corev1.PersistentVolumeClaim
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &pvc); err != nil {
			return false, "", err
		}
		got := pvc.Status.Capacity[corev1.ResourceStorage]
		return got.Cmp(want) >= 0, got.String(), nil
	})
}

// deleteClaim deletes the claim's pod and the claim and waits until its PV is gone.
func (e *env) deleteClaim(name string) {
	e.t.Helper()
	var pvc corev1.PersistentVolumeClaim
	e.apply("get PVC "+name, func(ctx context.Context) error {
		return e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, &pvc)
	})
	pv := pvc.Spec.VolumeName
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.PersistentVolumeClaim{}} {
		obj.SetNamespace(e.ns)
		obj.SetName(name)
		e.apply(fmt.Sprintf("delete %T %s", obj, name), func(ctx context.Context) error { return e.c.Delete(ctx, obj) })
	}
	e.eventually("PV "+pv+" of deleted claim "+name+" gone", func(ctx context.Context) (bool, string, error) {
		err := e.c.Get(ctx, client.ObjectKey{Name: pv}, &corev1.PersistentVolume{})
		if err != nil && strings.Contains(err.Error(), "not found") {
			return true, "", nil
		}
		return false, "PV still there", err
	})
}

// verify checks the invariants after the load, deletes everything, checks that nothing of ours
// is left, and prints the table.
func (ch *chaos) verify(t *testing.T, plan chaosPlan) {
	e := ch.e
	var rows []invariant
	count := func(f func(claimResult) bool) int {
		n := 0
		for _, r := range ch.results {
			if f(r) {
				n++
			}
		}
		return n
	}
	for _, op := range []string{opProvision, opExpand, opSnapshot, opDelete} {
		rows = append(rows, invariant{
			"claims that " + op + ": done, data read back",
			count(func(r claimResult) bool { return r.op == op }),
			count(func(r claimResult) bool { return r.op == op && r.ok }),
		})
	}
	// The last fault may have been moments ago: the API server answers again first.
	e.eventually("the API server answers after the faults", func(ctx context.Context) (bool, string, error) {
		return true, "", e.c.List(ctx, &corev1.PersistentVolumeClaimList{}, client.InNamespace(e.ns))
	})
	bound, running := 0, 0
	wanted := count(func(r claimResult) bool { return r.op != opDelete })
	for _, r := range ch.results {
		if r.op == opDelete {
			continue
		}
		var pvc corev1.PersistentVolumeClaim
		if e.c.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: r.name}, &pvc) == nil &&
			pvc.Status.Phase == corev1.ClaimBound {
			bound++
		}
		var pod corev1.Pod
		if e.c.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: r.name}, &pod) == nil &&
			pod.Status.Phase == corev1.PodRunning && strings.Contains(e.output(&pod), "read=chaos-") {
			running++
		}
	}
	rows = append(rows, invariant{"claims kept: Bound after the faults", wanted, bound},
		invariant{"claims kept: pod Running on its data", wanted, running})

	// Delete everything of the test and wait for the driver to clean up.
	rows = append(rows, e.deleteAndCount(slices.Collect(maps.Keys(ch.killers)))...)
	if !logInvariants(t, fmt.Sprintf("seed %d, %d faults", plan.seed, len(plan.faults)), rows) {
		t.Errorf("an invariant does not hold (table above; CHAOS_SEED=%d repeats the run)", plan.seed)
	}
}
