package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/google/pprof/profile"
	corev1 "k8s.io/api/core/v1"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/demo"
)

// profileReader is the ClusterRole that may read the Go runtime profiles the operator and the
// node agents serve when the operator runs with --profiling (config/components/profiling).
const profileReader = "lvms-profile-reader"

// profiler takes a CPU profile of the operator and of every node agent over the first
// --profile-seconds of provisioning, and a heap profile (in use) right after it, through the
// resource probe's service account bound to lvms-profile-reader. Each is written to
// <results>/profiles/<pod>.{cpu,heap}.pb.gz for `go tool pprof`, and summarised.
type profiler struct {
	probe   *resourceProbe
	seconds int
	dir     string

	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
	cpu  map[string]string // pod → CPU profile file
}

// startProfiles starts the profiler when --profile-seconds asks for it and the resource probe
// works; a failure only costs the profiles (they are extra).
func startProfiles(ctx context.Context, o *options, res *resourceProbe, log io.Writer) *profiler {
	if o.profileSeconds <= 0 {
		return nil
	}
	if res == nil || res.usage == nil {
		fmt.Fprintln(log, "warning: no profiles: they need the resource probe (--resources)")
		return nil
	}
	p := &profiler{probe: res, seconds: o.profileSeconds, dir: profilesDir(o)}
	if err := p.start(ctx); err != nil {
		fmt.Fprintf(log, "warning: no profiles: %v\n", err)
		return nil
	}
	fmt.Fprintf(log, "profiling the operator and the node agents for %d s into %s\n", o.profileSeconds, p.dir)
	return p
}

// profilesDir is where the profiles of a run go: <results>/profiles.
func profilesDir(o *options) string { return filepath.Join(cmp.Or(o.results, "."), "profiles") }

// start begins the profiles of every running operator and node agent pod.
func (p *profiler) start(ctx context.Context) error {
	if err := p.probe.bind(ctx, profileReader); err != nil {
		return err
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fmt.Errorf("profiles directory: %w", err)
	}
	pods, err := p.probe.pods(ctx)
	if err != nil {
		return err
	}
	p.cpu = map[string]string{}
	for _, pod := range pods {
		p.wg.Go(func() { p.take(ctx, pod) })
	}
	return nil
}

// take fetches the CPU profile, then the heap profile, of one pod.
func (p *profiler) take(ctx context.Context, pod corev1.Pod) {
	for _, prof := range []struct{ kind, query string }{
		{"cpu", fmt.Sprintf("profile?seconds=%d", p.seconds)},
		{"heap", "heap?gc=1"},
	} {
		file := filepath.Join(p.dir, pod.Name+"."+prof.kind+".pb.gz")
		if err := p.fetch(ctx, pod, prof.query, file); err != nil {
			p.mu.Lock()
			p.errs = append(p.errs, fmt.Errorf("%s profile of %s: %w", prof.kind, pod.Name, err))
			p.mu.Unlock()
			return
		}
		if prof.kind == "cpu" {
			p.mu.Lock()
			p.cpu[pod.Name] = file
			p.mu.Unlock()
		}
	}
}

// fetch reads /debug/pprof/<query> of the pod from its node (curl in the node agent there, as
// the resource probe scrapes) and writes it to file. The profile crosses the exec stream base64
// encoded, since the stream carries stderr too.
func (p *profiler) fetch(ctx context.Context, pod corev1.Pod, query, file string) error {
	script := fmt.Sprintf("f=$(mktemp) && curl -sSkf -H 'Authorization: Bearer %s' -o \"$f\" "+
		"'https://%s:%d/debug/pprof/%s' && base64 -w0 \"$f\"; rc=$?; rm -f \"$f\"; exit $rc",
		p.probe.token, pod.Status.PodIP, metricsPort, query)
	out, err := demo.AgentExec(ctx, p.probe.cfg, p.probe.c, p.probe.cs, p.probe.o.operatorNamespace,
		pod.Spec.NodeName, script)
	if err != nil {
		return fmt.Errorf("%w: %.300s", err, out)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out))
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// wait waits for the profiles and prints the top functions of each CPU profile to log.
func (p *profiler) wait(log io.Writer) {
	p.wg.Wait()
	for _, err := range p.errs {
		fmt.Fprintf(log, "warning: %v\n", err)
	}
	for _, pod := range slices.Sorted(maps.Keys(p.cpu)) {
		b, err := os.ReadFile(p.cpu[pod])
		if err == nil {
			err = writeCPUTop(log, pod, b, 12)
		}
		if err != nil {
			fmt.Fprintf(log, "warning: CPU profile of %s: %v\n", pod, err)
		}
	}
}

// funcTime is one function's CPU time in a profile: flat (in the function itself) and cumulative
// (with what it calls).
type funcTime struct {
	name      string
	flat, cum int64
}

// cpuTop returns the CPU time of every function of a CPU profile, the functions sorted by flat
// time, and the profile's total.
func cpuTop(data []byte) (funcs []funcTime, total int64, err error) {
	return profileTop(data, "nanoseconds", func(st *profile.ValueType) bool { return st.Unit == "nanoseconds" })
}

// heapTop is cpuTop for the bytes in use of a heap profile.
func heapTop(data []byte) (funcs []funcTime, total int64, err error) {
	return profileTop(data, "inuse_space", func(st *profile.ValueType) bool { return st.Type == "inuse_space" })
}

// profileTop sums the samples of the first sample type that is (what) per function: flat in the
// function itself, cumulative with what it calls. The functions come sorted by flat value.
func profileTop(data []byte, what string, is func(*profile.ValueType) bool) (funcs []funcTime, total int64, err error) {
	prof, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, 0, fmt.Errorf("parse: %w", err)
	}
	idx := slices.IndexFunc(prof.SampleType, is)
	if idx < 0 {
		return nil, 0, fmt.Errorf("no sample type %s (%d types)", what, len(prof.SampleType))
	}
	byName := map[string]*funcTime{}
	get := func(name string) *funcTime {
		if byName[name] == nil {
			byName[name] = &funcTime{name: name}
		}
		return byName[name]
	}
	for _, s := range prof.Sample {
		v := s.Value[idx]
		total += v
		seen := map[string]bool{}
		for i, loc := range s.Location {
			for j, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				name := line.Function.Name
				if i == 0 && j == 0 {
					get(name).flat += v
				}
				if !seen[name] {
					seen[name] = true
					get(name).cum += v
				}
			}
		}
	}
	for _, f := range byName {
		funcs = append(funcs, *f)
	}
	slices.SortFunc(funcs, func(a, b funcTime) int {
		return cmp.Or(cmp.Compare(b.flat, a.flat), cmp.Compare(b.cum, a.cum), strings.Compare(a.name, b.name))
	})
	return funcs, total, nil
}

// ownPrefix marks the functions of this project in a profile.
const ownPrefix = "github.com/lvm-operator/lvm-operator/"

// writeCPUTop prints the n functions of a CPU profile with the most flat time, as `go tool pprof
// -top` does, then the n functions of this project with the most cumulative time (where its own
// code spent the samples, the runtime's and the libraries' included).
func writeCPUTop(w io.Writer, pod string, data []byte, n int) error {
	funcs, total, err := cpuTop(data)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "CPU profile of %s: %.2f s sampled\n", pod, float64(total)/1e9)
	writeTops(w, funcs, total, n, seconds)
	return nil
}

// writeHeapTop is writeCPUTop for the bytes in use of a heap profile.
func writeHeapTop(w io.Writer, pod string, data []byte, n int) error {
	funcs, total, err := heapTop(data)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "heap profile of %s: %s MiB in use (sampled)\n", pod, mib(float64(total)))
	writeTops(w, funcs, total, n, mebibytes)
	return nil
}

func writeTops(w io.Writer, funcs []funcTime, total int64, n int, u unit) {
	writeFuncs(w, funcs[:min(n, len(funcs))], total, u)
	var own []funcTime
	for _, f := range funcs {
		if strings.HasPrefix(f.name, ownPrefix) && f.cum > 0 {
			own = append(own, f)
		}
	}
	slices.SortStableFunc(own, func(a, b funcTime) int { return cmp.Compare(b.cum, a.cum) })
	fmt.Fprintf(w, "  this project's functions by cumulative %s:\n", u.what)
	writeFuncs(w, own[:min(n, len(own))], total, u)
}

// unit is how writeFuncs prints a profile's values.
type unit struct {
	what   string  // what the values are, for the heading
	suffix string  // printed after each value
	scale  float64 // value / scale is printed
}

var (
	seconds   = unit{"time", "s", 1e9}
	mebibytes = unit{"bytes in use", "M", 1 << 20}
)

func writeFuncs(w io.Writer, funcs []funcTime, total int64, u unit) {
	fmt.Fprintf(w, "  %8s %6s %8s %6s  %s\n", "flat", "flat%", "cum", "cum%", "function")
	for _, f := range funcs {
		fmt.Fprintf(w, "  %7.2f%s %5.1f%% %7.2f%s %5.1f%%  %s\n", float64(f.flat)/u.scale, u.suffix,
			percent(f.flat, total), float64(f.cum)/u.scale, u.suffix, percent(f.cum, total),
			strings.TrimPrefix(f.name, ownPrefix))
	}
}

func percent(v, total int64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(v) / float64(total)
}
