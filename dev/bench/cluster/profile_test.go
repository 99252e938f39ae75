package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// cpuProfile builds a CPU profile whose samples are call stacks (leaf first) of the given
// nanoseconds.
func cpuProfile(t *testing.T, samples map[string]int64) []byte {
	t.Helper()
	return stackProfile(t, &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}, samples, func(ns int64) []int64 { return []int64{ns / 10_000_000, ns} })
}

// heapProfile is cpuProfile for a heap profile of the given bytes in use (and twice that allocated).
func heapProfile(t *testing.T, samples map[string]int64) []byte {
	t.Helper()
	return stackProfile(t, &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
		},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:     512 * 1024,
	}, samples, func(b int64) []int64 { return []int64{2, 2 * b, 1, b} })
}

// stackProfile adds samples to prof: call stacks (leaf first, ";"-separated) with values(v).
func stackProfile(t *testing.T, prof *profile.Profile, samples map[string]int64, values func(int64) []int64) []byte {
	t.Helper()
	funcs := map[string]*profile.Function{}
	for stack, v := range samples {
		s := &profile.Sample{Value: values(v)}
		for name := range strings.SplitSeq(stack, ";") {
			f := funcs[name]
			if f == nil {
				f = &profile.Function{ID: uint64(len(funcs) + 1), Name: name}
				funcs[name] = f
				prof.Function = append(prof.Function, f)
			}
			loc := &profile.Location{ID: uint64(len(prof.Location) + 1), Line: []profile.Line{{Function: f}}}
			prof.Location = append(prof.Location, loc)
			s.Location = append(s.Location, loc)
		}
		prof.Sample = append(prof.Sample, s)
	}
	var b bytes.Buffer
	if err := prof.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCPUTop(t *testing.T) {
	data := cpuProfile(t, map[string]int64{
		"syscall.Syscall;exec.Run;main.create":        3e9,
		"runtime.mallocgc;json.Unmarshal;main.create": 2e9,
		"runtime.mallocgc;main.list":                  1e9,
		// A recursive stack counts once in the cumulative time.
		"main.walk;main.walk;main.list": 5e8,
	})
	funcs, total, err := cpuTop(data)
	if err != nil {
		t.Fatal(err)
	}
	if total != 6.5e9 {
		t.Errorf("total %d, want 6.5e9", total)
	}
	want := []funcTime{
		{"runtime.mallocgc", 3e9, 3e9}, {"syscall.Syscall", 3e9, 3e9}, {"main.walk", 5e8, 5e8},
		{"main.create", 0, 5e9}, {"exec.Run", 0, 3e9}, {"json.Unmarshal", 0, 2e9},
	}
	for i, w := range want {
		if funcs[i] != w {
			t.Errorf("funcs[%d] = %+v, want %+v", i, funcs[i], w)
		}
	}
	byName := map[string]funcTime{}
	for _, f := range funcs {
		byName[f.name] = f
	}
	if l := byName["main.list"]; l.cum != 1.5e9 {
		t.Errorf("main.list %+v, want cum 1.5e9", l)
	}
	var out bytes.Buffer
	if err := writeCPUTop(&out, "lvms-node-x", data, 2); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "6.50 s sampled") || strings.Count(got, "\n") != 6 {
		t.Errorf("writeCPUTop:\n%s", got)
	}
	// This project's functions: none in the synthetic stacks but the one below.
	data = cpuProfile(t, map[string]int64{ownPrefix + "internal/lvmd.(*Service).Refresh;main.run": 1e9})
	out.Reset()
	if err := writeCPUTop(&out, "lvms-node-x", data, 2); err != nil {
		t.Fatal(err)
	}
	_, own, found := strings.Cut(out.String(), "cumulative time:")
	if !found || !strings.Contains(own, " internal/lvmd.(*Service).Refresh") || strings.Contains(own, "main.run") {
		t.Errorf("own functions:\n%s", out.String())
	}
	if _, _, err := cpuTop([]byte("not a profile")); err == nil {
		t.Error("cpuTop of garbage: no error")
	}
}

func TestHeapTop(t *testing.T) {
	data := heapProfile(t, map[string]int64{
		"reflect.New;json.Unmarshal;" + ownPrefix + "internal/csi/controller.(*Server).index": 3 << 20,
		"runtime.malg;runtime.newproc": 1 << 20,
	})
	var out bytes.Buffer
	if err := writeHeapTop(&out, "lvms-operator-x", data, 3); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	// In use, not allocated (which is twice as much).
	for _, want := range []string{
		"4.0 MiB in use", "   3.00M  75.0%    3.00M  75.0%  reflect.New",
		"cumulative bytes in use:", "   0.00M   0.0%    3.00M  75.0%  internal/csi/controller.(*Server).index",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("writeHeapTop lacks %q:\n%s", want, got)
		}
	}
	if _, _, err := heapTop(cpuProfile(t, map[string]int64{"main.f": 1})); err == nil {
		t.Error("heapTop of a CPU profile: no error")
	}
}
