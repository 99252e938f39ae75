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
	prof := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	funcs := map[string]*profile.Function{}
	for stack, ns := range samples {
		s := &profile.Sample{Value: []int64{ns / 10_000_000, ns}}
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
