package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// The scale mode (--scale-lvs 0,100,1000) measures what the number of LVs on one node costs: at
// each step it creates LogicalVolumes on the node up to the step's count (the node agent makes their
// LVs; no PVC, pod or CSI call is involved), then reads the operator's and the node agent's RSS,
// restarts the node agent and times its start → Ready, and reads them again. At the end it deletes
// every LogicalVolume at once and times each until it is gone (its LV removed).

// scaleStep is what one step measured.
type scaleStep struct {
	LVs int `json:"lvs"`
	// CreateSeconds is how long the step's new LogicalVolumes took until all had an LV.
	CreateSeconds float64 `json:"createSeconds"`
	// Before and After are the readings before and after the node agent's restart (After: the new
	// process, 20 s after it was Ready).
	Before []scaleReading `json:"beforeRestart"`
	After  []scaleReading `json:"afterRestart"`
	// StartToReadySeconds is the mean of StartToReadySamples, each the node agent container's
	// start → its pod's Ready condition after one restart. Both ends come from the API server in
	// whole seconds, so a sample is off by less than a second either way; the mean of several is
	// off by much less, as the cuts fall anywhere within the second.
	StartToReadySeconds float64   `json:"startToReadySeconds"`
	StartToReadySamples []float64 `json:"startToReadySamples"`
}

// scaleReading is one process's memory at one moment.
type scaleReading struct {
	Pod       string  `json:"pod"`
	RSSBytes  float64 `json:"rssBytes"`
	HeapBytes float64 `json:"heapInuseBytes"`
}

// scaleResult is the whole scale run.
type scaleResult struct {
	Node        string      `json:"node"`
	DeviceClass string      `json:"deviceClass"`
	Size        string      `json:"size"`
	Steps       []scaleStep `json:"steps"`
	// DeleteSeconds are the LogicalVolumes' delete → gone times, sorted.
	DeleteSeconds []float64 `json:"deleteSeconds"`
}

// parseScale reads --scale-lvs: increasing counts of LVs.
func parseScale(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || len(out) > 0 && n < out[len(out)-1] {
			return nil, fmt.Errorf("--scale-lvs %q: want increasing counts like 0,100,1000", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// runScale is the scale mode: the steps, then the deletion, then the report.
func runScale(ctx context.Context, o *options, stdout, log io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	cl, cfg, err := connect(o)
	if err != nil {
		return err
	}
	sc, nodes, err := classNamespaceNodes(ctx, cl, o, 1)
	if err != nil || len(nodes) == 0 {
		return fmt.Errorf("pick a node: %w", errors.Join(err, errors.New("no Ready node")))
	}
	s := &scaler{c: cl.c, o: o, node: nodes[0], class: sc.Parameters[driver.ParamDeviceClass],
		probe: &resourceProbe{cfg: cfg, c: cl.c, cs: cl.cs, o: o, usage: map[string]*resourceUsage{}}}
	if err := s.probe.setup(ctx); err != nil {
		return err
	}
	defer s.probe.teardown()
	if o.profileSeconds > 0 {
		if err := s.probe.bind(ctx, profileReader); err != nil {
			return err
		}
	}
	r := &scaleResult{Node: s.node, DeviceClass: s.class, Size: o.size}
	for _, n := range o.scaleLVs {
		fmt.Fprintf(log, "step: %d LVs on %s\n", n, s.node)
		step, err := s.step(ctx, n, log)
		if err != nil {
			return errors.Join(err, s.deleteAll(context.WithoutCancel(ctx), r, log))
		}
		r.Steps = append(r.Steps, step)
		fmt.Fprintln(log, "  "+step.line())
	}
	if err := s.deleteAll(ctx, r, log); err != nil {
		return err
	}
	return writeScale(stdout, o.results, r)
}

// scaler creates and measures LogicalVolumes on one node.
type scaler struct {
	c       client.Client
	o       *options
	node    string
	class   string
	probe   *resourceProbe
	created int
}

// step grows the node's LVs to n and measures.
func (s *scaler) step(ctx context.Context, n int, log io.Writer) (scaleStep, error) {
	st := scaleStep{LVs: n}
	start := time.Now()
	if err := s.grow(ctx, n); err != nil {
		return st, err
	}
	st.CreateSeconds = time.Since(start).Seconds()
	fmt.Fprintf(log, "  %d LVs in %.1f s\n", n, st.CreateSeconds)
	time.Sleep(20 * time.Second) // let the agent's periodic work after the burst finish
	var err error
	if st.Before, err = s.readings(ctx); err != nil {
		return st, err
	}
	s.heapProfiles(ctx, n, log)
	for i := range max(s.o.agentRestarts, 1) {
		if i > 0 {
			time.Sleep(10 * time.Second) // the previous agent's first state read and discovery
		}
		seconds, err := s.restartAgent(ctx)
		if err != nil {
			return st, err
		}
		st.StartToReadySamples = append(st.StartToReadySamples, seconds)
	}
	st.StartToReadySeconds = mean(st.StartToReadySamples)
	time.Sleep(20 * time.Second)
	st.After, err = s.readings(ctx)
	return st, err
}

// grow creates LogicalVolumes up to n, 20 at a time, and waits until every one has its LV.
func (s *scaler) grow(ctx context.Context, n int) error {
	err := forRange(ctx, s.created, n, 20, s.create)
	s.created = max(s.created, n)
	if err != nil {
		return err
	}
	var done int
	var why string
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, s.o.claimTimeout+time.Duration(n)*time.Second, true,
		func(ctx context.Context) (bool, error) {
			var err error
			done, why, err = s.withLV(ctx)
			return done >= n, err
		})
	if err != nil {
		return fmt.Errorf("%d of %d LogicalVolumes have their LV (last failure: %q): %w", done, n, why, err)
	}
	return nil
}

// scaleName is the i-th LogicalVolume of the run.
func (s *scaler) scaleName(i int) string { return fmt.Sprintf("bench-%s-%04d", s.o.runID, i) }

func (s *scaler) create(ctx context.Context, i int) error {
	lv := &topolvmv1.LogicalVolume{
		ObjectMeta: metav1.ObjectMeta{Name: s.scaleName(i), Labels: map[string]string{benchLabel: s.o.runID}},
		Spec: topolvmv1.LogicalVolumeSpec{Name: s.scaleName(i), NodeName: s.node, DeviceClass: s.class,
			Size: resource.MustParse(s.o.size)},
	}
	if err := s.c.Create(ctx, lv); err != nil {
		return fmt.Errorf("create LogicalVolume %s: %w", lv.Name, err)
	}
	return nil
}

// withLV counts the run's LogicalVolumes whose LV exists, and says why one has none (the last
// failure's message; the agent retries).
func (s *scaler) withLV(ctx context.Context) (int, string, error) {
	var list topolvmv1.LogicalVolumeList
	if err := s.c.List(ctx, &list, client.MatchingLabels{benchLabel: s.o.runID}); err != nil {
		return 0, "", fmt.Errorf("list LogicalVolumes: %w", err)
	}
	n, why := 0, ""
	for _, lv := range list.Items {
		switch {
		case lv.Status.VolumeID != "":
			n++
		case lv.Status.Message != "":
			why = lv.Name + ": " + lv.Status.Message
		}
	}
	return n, why, nil
}

// readings are the operator's and the node's agent's RSS and Go heap now.
func (s *scaler) readings(ctx context.Context) ([]scaleReading, error) {
	var out []scaleReading
	err := s.probe.read(ctx, func(u *resourceUsage, m processMetrics) {
		if s.otherNodesAgent(u.Pod, u.Node) {
			return
		}
		out = append(out, scaleReading{Pod: u.Pod, RSSBytes: m.rss, HeapBytes: m.heap})
	})
	slices.SortFunc(out, func(a, b scaleReading) int { return strings.Compare(a.Pod, b.Pod) })
	return out, err
}

// otherNodesAgent reports whether pod, on node, is the node agent of a node other than the
// scaled one: the scale mode reads and profiles only the operator and the scaled node's agent.
func (s *scaler) otherNodesAgent(pod, node string) bool {
	return strings.HasPrefix(pod, lvmcluster.NodeDaemonSetName+"-") && node != s.node
}

// heapProfiles takes a heap profile (in use, after a GC) of the operator and of the node's agent
// when --profile-seconds is set, into <results>/profiles/<n>lvs-<pod>.heap.pb.gz, and prints the
// top of each: what grows with the LVs. A failure costs only the profile.
func (s *scaler) heapProfiles(ctx context.Context, n int, log io.Writer) {
	if s.o.profileSeconds <= 0 {
		return
	}
	p := &profiler{probe: s.probe, dir: profilesDir(s.o)}
	pods, err := s.probe.pods(ctx)
	if err == nil {
		err = os.MkdirAll(p.dir, 0o755)
	}
	if err != nil {
		fmt.Fprintf(log, "warning: no heap profiles at %d LVs: %v\n", n, err)
		return
	}
	for _, pod := range pods {
		if s.otherNodesAgent(pod.Name, pod.Spec.NodeName) {
			continue
		}
		file := filepath.Join(p.dir, fmt.Sprintf("%04dlvs-%s.heap.pb.gz", n, pod.Name))
		err := p.fetch(ctx, pod, "heap?gc=1", file)
		var b []byte
		if err == nil {
			b, err = os.ReadFile(file)
		}
		if err == nil {
			err = writeHeapTop(log, fmt.Sprintf("%s at %d LVs", pod.Name, n), b, 12)
		}
		if err != nil {
			fmt.Fprintf(log, "warning: heap profile of %s at %d LVs: %v\n", pod.Name, n, err)
		}
	}
}

// restartAgent deletes the node's agent pod and returns its successor's start → Ready.
func (s *scaler) restartAgent(ctx context.Context) (float64, error) {
	old, err := s.agentPod(ctx, "")
	if err != nil {
		return 0, err
	}
	if err := s.c.Delete(ctx, old); err != nil {
		return 0, fmt.Errorf("delete %s: %w", old.Name, err)
	}
	var seconds float64
	err = wait.PollUntilContextTimeout(
		ctx,
		time.Second,
		s.o.claimTimeout,
		true,
		func(ctx context.Context) (bool, error) {
			pod, err := s.agentPod(ctx, old.Name)
			if err != nil || pod == nil {
				return false, nil //nolint:nilerr // not there yet
			}
			var started, ready time.Time
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.Name == "node" && cs.State.Running != nil {
					started = cs.State.Running.StartedAt.Time
				}
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready = c.LastTransitionTime.Time
				}
			}
			if started.IsZero() || ready.IsZero() {
				return false, nil
			}
			seconds = ready.Sub(started).Seconds()
			return true, nil
		},
	)
	if err != nil {
		return 0, fmt.Errorf("wait for the node agent on %s after its restart: %w", s.node, err)
	}
	return seconds, nil
}

// agentPod is the node agent pod on the node other than skip (nil, nil: none yet).
func (s *scaler) agentPod(ctx context.Context, skip string) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.InNamespace(s.o.operatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": lvmcluster.NodeDaemonSetName}); err != nil {
		return nil, fmt.Errorf("list node agent pods: %w", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == s.node && p.Name != skip && p.DeletionTimestamp.IsZero() {
			return p, nil
		}
	}
	if skip == "" {
		return nil, fmt.Errorf("no node agent pod on %s", s.node)
	}
	return nil, nil
}

// deleteAll deletes the run's LogicalVolumes at once and records each one's delete → gone.
func (s *scaler) deleteAll(ctx context.Context, r *scaleResult, log io.Writer) error {
	start := time.Now()
	if err := s.c.DeleteAllOf(ctx, &topolvmv1.LogicalVolume{},
		client.MatchingLabels{benchLabel: s.o.runID}); err != nil {
		return fmt.Errorf("delete LogicalVolumes: %w", err)
	}
	pending := map[string]bool{}
	for i := range s.created {
		pending[s.scaleName(i)] = true
	}
	fmt.Fprintf(log, "deleting %d LogicalVolumes\n", len(pending))
	err := wait.PollUntilContextTimeout(
		ctx,
		500*time.Millisecond,
		s.o.claimTimeout+time.Duration(s.created)*time.Second,
		true,
		func(ctx context.Context) (bool, error) {
			var list topolvmv1.LogicalVolumeList
			if err := s.c.List(ctx, &list, client.MatchingLabels{benchLabel: s.o.runID}); err != nil {
				return false, fmt.Errorf("list LogicalVolumes: %w", err)
			}
			left := map[string]bool{}
			for _, lv := range list.Items {
				left[lv.Name] = true
			}
			for name := range pending {
				if !left[name] {
					delete(pending, name)
					r.DeleteSeconds = append(r.DeleteSeconds, time.Since(start).Seconds())
				}
			}
			return len(pending) == 0, nil
		},
	)
	slices.Sort(r.DeleteSeconds)
	if err != nil {
		return fmt.Errorf("%d LogicalVolumes not gone: %w", len(pending), err)
	}
	return nil
}

// mib formats bytes as MiB.
func mib(v float64) string { return fmt.Sprintf("%.1f", v/(1<<20)) }

// line is the step's row of the table.
func (st scaleStep) line() string {
	readings := func(rs []scaleReading) string {
		var parts []string
		for _, x := range rs {
			name := "operator"
			if strings.HasPrefix(x.Pod, lvmcluster.NodeDaemonSetName+"-") {
				name = "agent"
			}
			parts = append(parts, fmt.Sprintf("%s %s/%s", name, mib(x.RSSBytes), mib(x.HeapBytes)))
		}
		return strings.Join(parts, ", ")
	}
	samples := make([]string, len(st.StartToReadySamples))
	for i, x := range st.StartToReadySamples {
		samples[i] = fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%6d %9.1fs  %-44s %-44s %.1f s (%s)", st.LVs, st.CreateSeconds, readings(st.Before),
		readings(st.After), st.StartToReadySeconds, strings.Join(samples, ", "))
}

// writeScale prints the steps and the deletion, and writes scale.json under dir.
func writeScale(w io.Writer, dir string, r *scaleResult) error {
	fmt.Fprintf(w, "LVs of %s (device class %s) on %s: RSS / Go heap in use, MiB\n", r.Size, r.DeviceClass, r.Node)
	fmt.Fprintf(w, "%6s %10s  %-44s %-44s %s\n", "LVs", "create", "before the agent's restart",
		"after the last restart (new process)", "agent start→Ready: mean (each restart)")
	for _, st := range r.Steps {
		fmt.Fprintln(w, st.line())
	}
	if d := r.DeleteSeconds; len(d) > 0 {
		fmt.Fprintf(w, "deletion of %d LogicalVolumes at once, delete → gone: p50 %.1f s, p90 %.1f s, p99 %.1f s, "+
			"max %.1f s; p99/p50 %.2f\n", len(d), percentile(d, 50), percentile(d, 90), percentile(d, 99),
			d[len(d)-1], percentile(d, 99)/percentile(d, 50))
	}
	if dir == "" {
		return nil
	}
	return writeJSON(dir, "scale.json", r)
}

// mean is the arithmetic mean of xs (0 for none).
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}
