package demo

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster"
)

func TestLastDFSize(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want int64
		ok   bool
	}{
		{"none", "wrote: hello\n", 0, false},
		{"one", "wrote: hello\ndf: /dev/vg1/x 1038336 40000 998336 4% /data\n", 1038336, true},
		{"last wins", "df: /dev/vg1/x 1038336 1 1 1% /data\ndf: /dev/vg1/x 2086912 1 1 1% /data\n", 2086912, true},
		{"garbage", "df: /dev/vg1/x many 1 1 1% /data\n", 0, false},
		{"wrapped name", "df:                         2031616     47904   1983712   2% /data\n", 2031616, true},
		{"too short", "df: 1 2 3\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := LastDFSize(tt.out)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("LastDFSize = %d, %t; want %d, %t", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestStepErrorNamesStepAndLogs(t *testing.T) {
	cause := errors.New("boom")
	err := error(&StepError{Step: "LVMCluster Ready", Logs: []string{"/s/logs/operator.log"}, Err: cause})
	if !errors.Is(err, cause) {
		t.Fatal("StepError does not unwrap to its cause")
	}
	for _, want := range []string{`"LVMCluster Ready"`, "boom", "/s/logs/operator.log"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not contain %q", err.Error(), want)
		}
	}
}

func TestSummaryAndLogPaths(t *testing.T) {
	l, err := devcluster.NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	d := &demo{l: l, out: &out}
	d.summary([]timing{{name: "up", took: 2 * time.Second}, {name: "expand", took: time.Second, err: errors.New("x")}})
	for _, want := range []string{"up", "2s", "ok", "expand", "FAILED", "total", "3s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary %q lacks %q", out.String(), want)
		}
	}
	// The product's components run in pods: their logs are kubectl commands; the rest are files.
	got := d.logPaths([]string{"operator", "supervisor"})
	if len(got) != 2 || got[0] != podLogs["operator"] || got[1] != l.Log("supervisor") {
		t.Errorf("logPaths = %v, want [%s %s]", got, podLogs["operator"], l.Log("supervisor"))
	}
}
