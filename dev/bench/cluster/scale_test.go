package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseScale(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		ok   bool
	}{
		{"0,100,1000", []int{0, 100, 1000}, true},
		{" 5 ", []int{5}, true},
		{"100,10", nil, false},
		{"-1", nil, false},
		{"ten", nil, false},
	} {
		got, err := parseScale(tc.in)
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("parseScale(%q) = %v, %v; want %v (ok %t)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestWriteScale checks the table's figures: MiB per process before and after the restart, and the
// deletion percentiles.
func TestWriteScale(t *testing.T) {
	r := &scaleResult{Node: "node-0", DeviceClass: "thin", Size: "32Mi", Steps: []scaleStep{{
		LVs: 100, CreateSeconds: 42.5, StartToReadySeconds: 1.6666, StartToReadySamples: []float64{1, 2, 2},
		Before: []scaleReading{{Pod: "lvms-node-abc", RSSBytes: 50 << 20, HeapBytes: 10 << 20},
			{Pod: "lvms-operator-x", RSSBytes: 60 << 20, HeapBytes: 20 << 20}},
		After: []scaleReading{{Pod: "lvms-node-def", RSSBytes: 40 << 20, HeapBytes: 8 << 20}},
	}}, DeleteSeconds: []float64{1, 2, 3, 4}}
	var b strings.Builder
	if err := writeScale(&b, "", r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"agent 50.0/10.0, operator 60.0/20.0", "agent 40.0/8.0", "42.5s", "1.7 s (1, 2, 2)",
		"p50 2.0 s", "p99 4.0 s", "p99/p50 2.00"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
