package nodeagent

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

func TestCapacityAnnotations(t *testing.T) {
	tests := []struct {
		name string
		caps []lvmd.Capacity
		want map[string]string
	}{
		{name: "none", want: map[string]string{}},
		{name: "default class also under 00default", caps: []lvmd.Capacity{
			{DeviceClass: "ssd", Default: true, FreeBytes: 1 << 30},
			{DeviceClass: "hdd", FreeBytes: 0},
		}, want: map[string]string{
			"capacity.topolvm.io/ssd": "1073741824", "capacity.topolvm.io/00default": "1073741824",
			"capacity.topolvm.io/hdd": "0",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CapacityAnnotations(tt.caps); !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// chanWatcher is a CapacityWatcher fed by the test.
type chanWatcher chan []lvmd.Capacity

func (c chanWatcher) Watch(context.Context) <-chan []lvmd.Capacity { return c }

func testNode(annotations map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Annotations: annotations}}
}

func nodeAnnotations(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: "node-a"}, n); err != nil {
		t.Fatal(err)
	}
	return n.Annotations
}

// eventually polls cond (the annotator runs in its own goroutine).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func startAnnotator(t *testing.T, c client.Client, src CapacityWatcher) {
	t.Helper()
	a, err := NewCapacityAnnotator(CapacityAnnotatorOptions{Client: c, NodeName: "node-a", Capacities: src,
		RetryInitial: time.Millisecond, RetryLimit: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- a.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
}

// TestCapacityAnnotatorKeepsNodeInSync: updates are written, stale classes removed, foreign
// annotations kept.
func TestCapacityAnnotatorKeepsNodeInSync(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(testNode(map[string]string{
		"capacity.topolvm.io/gone": "5", "example.com/other": "x",
	})).Build()
	src := make(chanWatcher, 1)
	startAnnotator(t, c, src)

	steps := []struct {
		caps []lvmd.Capacity
		want map[string]string
	}{
		{caps: []lvmd.Capacity{{DeviceClass: "a", Default: true, FreeBytes: 10}, {DeviceClass: "b", FreeBytes: 20}},
			want: map[string]string{"example.com/other": "x", "capacity.topolvm.io/a": "10",
				"capacity.topolvm.io/00default": "10", "capacity.topolvm.io/b": "20"}},
		{caps: []lvmd.Capacity{{DeviceClass: "b", Default: true, FreeBytes: 7}},
			want: map[string]string{"example.com/other": "x", "capacity.topolvm.io/b": "7",
				"capacity.topolvm.io/00default": "7"}},
	}
	for i, s := range steps {
		src <- s.caps
		eventually(t, "annotations of step "+string(rune('0'+i)), func() bool {
			return maps.Equal(nodeAnnotations(t, c), s.want)
		})
	}
}

// TestCapacityAnnotatorRetries: a failed patch is retried without a new update.
func TestCapacityAnnotatorRetries(t *testing.T) {
	failures := 2
	c := fake.NewClientBuilder().WithObjects(testNode(nil)).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, o ...client.PatchOption) error {
			if failures > 0 {
				failures--
				return errors.New("apiserver unavailable")
			}
			return c.Patch(ctx, obj, p, o...)
		},
	}).Build()
	src := make(chanWatcher, 1)
	startAnnotator(t, c, src)
	src <- []lvmd.Capacity{{DeviceClass: "a", FreeBytes: 1}}
	eventually(t, "the annotation after two failed patches", func() bool {
		return nodeAnnotations(t, c)["capacity.topolvm.io/a"] == "1"
	})
}

// TestCapacityAnnotatorFollowsLVMD: with lvmd as the source, creating an LV lowers the annotation.
func TestCapacityAnnotatorFollowsLVMD(t *testing.T) {
	svc, _ := newService(t)
	c := fake.NewClientBuilder().WithObjects(testNode(nil)).Build()
	startAnnotator(t, c, svc)
	thickFree := "5360320512" // 6 GiB - 2 extents (pool metadata) - 1 GiB spare
	eventually(t, "initial capacity", func() bool {
		a := nodeAnnotations(t, c)
		return a["capacity.topolvm.io/thick"] == thickFree && a["capacity.topolvm.io/00default"] == thickFree &&
			a["capacity.topolvm.io/thin"] == "8589934592" && a["capacity.topolvm.io/missing"] == "0"
	})
	if _, err := svc.CreateLV(
		t.Context(),
		lvmd.CreateLVRequest{Name: "lv", DeviceClass: "thin", Size: gib},
	); err != nil {
		t.Fatal(err)
	}
	eventually(t, "capacity after a create", func() bool {
		return nodeAnnotations(t, c)["capacity.topolvm.io/thin"] == "7516192768"
	})
}
