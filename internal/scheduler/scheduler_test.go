package scheduler

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

const gib = uint64(1) << 30

// annotations builds capacity annotations from key/value pairs: "ssd", "1024" gives
// capacity.topolvm.io/ssd: "1024".
func annotations(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m["capacity.topolvm.io/"+kv[i]] = kv[i+1]
	}
	return m
}

func pod(kv ...string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: annotations(kv...)}}
}

// withSources sets p's lvms.topolvm.io/source-nodes annotation to nodes.
func withSources(p *corev1.Pod, nodes string) *corev1.Pod {
	p.Annotations["lvms.topolvm.io/source-nodes"] = nodes
	return p
}

func node(name string, kv ...string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations(kv...)}}
}

func bytesOf(n uint64) string { return strconv.FormatUint(n, 10) }

func newTestHandler(t *testing.T, cfg Config) *Handler {
	t.Helper()
	h, err := NewHandler(cfg, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// call sends body to the handler as kube-scheduler does and returns the response.
func call(t *testing.T, h http.Handler, method, path string, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func argsBody(t *testing.T, p *corev1.Pod, nodes ...corev1.Node) []byte {
	t.Helper()
	b, err := json.Marshal(extenderv1.ExtenderArgs{Pod: p, Nodes: &corev1.NodeList{Items: nodes}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// predicateCase is a filter call and the nodes it should keep and refuse (with the reasons).
type predicateCase struct {
	name       string
	pod        *corev1.Pod
	nodes      []corev1.Node
	wantPassed []string
	wantFailed map[string]string
}

func predicateCases() []predicateCase {
	return []predicateCase{
		{
			name:       "fits one node only",
			pod:        pod("ssd", bytesOf(5*gib)),
			nodes:      []corev1.Node{node("big", "ssd", bytesOf(10*gib)), node("small", "ssd", bytesOf(gib))},
			wantPassed: []string{"big"},
			wantFailed: map[string]string{"small": "out of VG free space for device class ssd"},
		},
		{
			name:       "exactly the request fits",
			pod:        pod("ssd", "4096"),
			nodes:      []corev1.Node{node("a", "ssd", "4096"), node("b", "ssd", "4095")},
			wantPassed: []string{"a"},
			wantFailed: map[string]string{"b": "out of VG free space for device class ssd"},
		},
		{
			name:       "node without the class's annotation",
			pod:        pod("ssd", "1"),
			nodes:      []corev1.Node{node("a", "hdd", bytesOf(gib)), node("b", "ssd", bytesOf(gib))},
			wantPassed: []string{"b"},
			wantFailed: map[string]string{"a": "no capacity annotation capacity.topolvm.io/ssd"},
		},
		{
			name:       "unparsable node annotation",
			pod:        pod("ssd", "1"),
			nodes:      []corev1.Node{node("a", "ssd", "lots"), node("b", "ssd", "-5")},
			wantPassed: []string{},
			wantFailed: map[string]string{
				"a": `bad capacity annotation capacity.topolvm.io/ssd: "lots"`,
				"b": `bad capacity annotation capacity.topolvm.io/ssd: "-5"`,
			},
		},
		{
			name:       "unparsable or negative pod annotation asks for nothing",
			pod:        pod("ssd", "5Gi", "hdd", "-1"),
			nodes:      []corev1.Node{node("a"), node("b", "ssd", "0")},
			wantPassed: []string{"a", "b"},
		},
		{
			name:       "pod without capacity annotations fits everywhere",
			pod:        pod(),
			nodes:      []corev1.Node{node("a"), node("b", "ssd", "0")},
			wantPassed: []string{"a", "b"},
		},
		{
			name: "default class",
			pod:  pod("00default", bytesOf(2*gib)),
			nodes: []corev1.Node{
				node("a", "00default", bytesOf(3*gib), "vg1", bytesOf(3*gib)),
				node("b", "00default", bytesOf(gib), "vg1", bytesOf(10*gib)),
			},
			wantPassed: []string{"a"},
			wantFailed: map[string]string{"b": "out of VG free space for device class 00default"},
		},
		{
			name: "several classes must all fit",
			pod:  pod("ssd", bytesOf(gib), "hdd", bytesOf(10*gib)),
			nodes: []corev1.Node{
				node("both", "ssd", bytesOf(gib), "hdd", bytesOf(10*gib)),
				node("ssd-only", "ssd", bytesOf(5*gib), "hdd", bytesOf(gib)),
				node("neither", "ssd", "0"),
			},
			wantPassed: []string{"both"},
			wantFailed: map[string]string{
				"ssd-only": "out of VG free space for device class hdd",
				"neither": "no capacity annotation capacity.topolvm.io/hdd; " +
					"out of VG free space for device class ssd",
			},
		},
	}
}

func TestPredicate(t *testing.T) {
	h := newTestHandler(t, DefaultConfig())
	for _, tt := range predicateCases() {
		t.Run(tt.name, func(t *testing.T) {
			rec := call(t, h, http.MethodPost, "/predicate", argsBody(t, tt.pod, tt.nodes...))
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var res extenderv1.ExtenderFilterResult
			if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			if res.Nodes == nil {
				t.Fatal("no Nodes in the result")
			}
			passed := []string{}
			for _, n := range res.Nodes.Items {
				passed = append(passed, n.Name)
			}
			if !slices.Equal(passed, tt.wantPassed) {
				t.Errorf("passed %v, want %v", passed, tt.wantPassed)
			}
			if len(res.FailedAndUnresolvableNodes) != len(tt.wantFailed) || len(res.FailedNodes) != 0 {
				t.Errorf("failed %v and unresolvable %v, want unresolvable %v",
					res.FailedNodes, res.FailedAndUnresolvableNodes, tt.wantFailed)
			}
			for name, reason := range tt.wantFailed {
				if got := res.FailedAndUnresolvableNodes[name]; got != reason {
					t.Errorf("node %s: reason %q, want %q", name, got, reason)
				}
			}
			if res.Error != "" {
				t.Errorf("Error %q", res.Error)
			}
		})
	}
}

// TestPredicateWireFormat sends the JSON kube-scheduler sends (the upstream types have no JSON
// tags: "Pod", "Nodes") and the lower-case keys of TopoLVM's own types, and checks that the
// answer keeps the passing node in full.
func TestPredicateWireFormat(t *testing.T) {
	h := newTestHandler(t, DefaultConfig())
	for _, body := range []string{
		`{"Pod":{"metadata":{"name":"p","annotations":{"capacity.topolvm.io/ssd":"10"}}},` +
			`"Nodes":{"items":[{"metadata":{"name":"a","labels":{"zone":"z1"},"annotations":{"capacity.topolvm.io/ssd":"10"}}},` +
			`{"metadata":{"name":"b"}}]},"NodeNames":null}`,
		`{"pod":{"metadata":{"name":"p","annotations":{"capacity.topolvm.io/ssd":"10"}}},` +
			`"nodes":{"items":[{"metadata":{"name":"a","labels":{"zone":"z1"},"annotations":{"capacity.topolvm.io/ssd":"10"}}},` +
			`{"metadata":{"name":"b"}}]}}`,
	} {
		rec := call(t, h, http.MethodPost, "/predicate", []byte(body))
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		var res map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		var nodes corev1.NodeList
		if err := json.Unmarshal(res["Nodes"], &nodes); err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) != 1 || nodes.Items[0].Name != "a" || nodes.Items[0].Labels["zone"] != "z1" {
			t.Errorf("Nodes %+v, want node a in full", nodes.Items)
		}
		if !strings.Contains(string(res["FailedAndUnresolvableNodes"]), `"b":"no capacity annotation`) {
			t.Errorf("FailedAndUnresolvableNodes %s", res["FailedAndUnresolvableNodes"])
		}
	}
}

func TestPrioritize(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		pod   *corev1.Pod
		nodes []corev1.Node
		want  extenderv1.HostPriorityList
	}{
		{
			name: "log2 of free GiB",
			cfg:  DefaultConfig(),
			pod:  pod("ssd", "1"),
			nodes: []corev1.Node{
				node("empty", "ssd", "0"), node("tiny", "ssd", "1"), node("one", "ssd", bytesOf(gib)),
				node("eight", "ssd", bytesOf(8*gib)), node("huge", "ssd", bytesOf(1<<20*gib)),
			},
			want: extenderv1.HostPriorityList{
				{Host: "empty", Score: 0}, {Host: "tiny", Score: 1}, {Host: "one", Score: 1},
				{Host: "eight", Score: 3}, {Host: "huge", Score: 10},
			},
		},
		{
			name: "several classes: the lowest counts, missing classes do not",
			cfg:  DefaultConfig(),
			pod:  pod("ssd", "1", "hdd", "1"),
			nodes: []corev1.Node{
				node("a", "ssd", bytesOf(64*gib), "hdd", bytesOf(4*gib)),
				node("b", "ssd", bytesOf(64*gib)),
				node("c"),
			},
			want: extenderv1.HostPriorityList{{Host: "a", Score: 2}, {Host: "b", Score: 6}, {Host: "c", Score: 0}},
		},
		{
			name:  "unparsable annotation scores 0",
			cfg:   DefaultConfig(),
			pod:   pod("ssd", "1", "hdd", "1"),
			nodes: []corev1.Node{node("a", "ssd", "lots", "hdd", bytesOf(64*gib))},
			want:  extenderv1.HostPriorityList{{Host: "a", Score: 0}},
		},
		{
			name: "per-class and default divisors",
			cfg:  Config{DefaultDivisor: 4, Divisors: map[string]float64{"ssd": 0.5}},
			pod:  pod("ssd", "1", "00default", "1"),
			nodes: []corev1.Node{
				node("ssd", "ssd", bytesOf(16*gib)),
				node("default", "00default", bytesOf(16*gib)),
			},
			want: extenderv1.HostPriorityList{{Host: "ssd", Score: 5}, {Host: "default", Score: 2}},
		},
		{
			name: "the sources' node scores 10, the others half their score, rounded up",
			cfg:  DefaultConfig(),
			pod:  withSources(pod("ssd", "1"), "src"),
			nodes: []corev1.Node{
				node("src", "ssd", bytesOf(8*gib)), node("huge", "ssd", bytesOf(1<<20*gib)),
				node("eight", "ssd", bytesOf(8*gib)), node("tiny", "ssd", "1"), node("empty", "ssd", "0"),
			},
			want: extenderv1.HostPriorityList{
				{Host: "src", Score: 10}, {Host: "huge", Score: 5}, {Host: "eight", Score: 2},
				{Host: "tiny", Score: 1}, {Host: "empty", Score: 0},
			},
		},
		{
			name: "several source nodes; a source node the scheduler did not send changes nothing else",
			cfg:  DefaultConfig(),
			pod:  withSources(pod("ssd", "1"), "a, gone,b"),
			nodes: []corev1.Node{
				node("a", "ssd", "0"), node("b", "ssd", bytesOf(1<<20*gib)), node("c", "ssd", bytesOf(64*gib)),
			},
			want: extenderv1.HostPriorityList{{Host: "a", Score: 10}, {Host: "b", Score: 10}, {Host: "c", Score: 3}},
		},
		{
			name:  "source nodes without capacity annotations are still scored",
			cfg:   DefaultConfig(),
			pod:   withSources(pod(), "a"),
			nodes: []corev1.Node{node("a"), node("b", "ssd", bytesOf(1<<20*gib))},
			want:  extenderv1.HostPriorityList{{Host: "a", Score: 10}, {Host: "b", Score: 0}},
		},
		{
			name:  "an empty source-nodes annotation is no annotation",
			cfg:   DefaultConfig(),
			pod:   withSources(pod(), " , "),
			nodes: []corev1.Node{node("a", "ssd", bytesOf(gib))},
			want:  extenderv1.HostPriorityList{},
		},
		{
			name:  "pod without capacity annotations gets no scores",
			cfg:   DefaultConfig(),
			pod:   pod(),
			nodes: []corev1.Node{node("a", "ssd", bytesOf(gib))},
			want:  extenderv1.HostPriorityList{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := call(t, newTestHandler(t, tt.cfg), http.MethodPost, "/prioritize", argsBody(t, tt.pod, tt.nodes...))
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			var got extenderv1.HostPriorityList
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got == nil || !slices.Equal(got, tt.want) {
				t.Errorf("scores %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCapacityScore(t *testing.T) {
	tests := []struct {
		free    uint64
		divisor float64
		want    int64
	}{
		{0, 1, 0},
		{1, 1, 1},
		{gib - 1, 1, 1},
		{gib, 1, 1},             // log2(1) = 0, raised to 1
		{3 * gib, 1, 1},         // log2(3) = 1.58, truncated
		{3*gib + gib - 1, 1, 1}, // whole GiB only: 3
		{4 * gib, 1, 2},
		{1023 * gib, 1, 9},
		{1024 * gib, 1, 10},
		{1 << 62, 1, 10},
		{100 * gib, 10, 3}, // log2(10) = 3.32
		{100 * gib, 1000, 1},
		{gib, 0.5, 1},
		{512 * gib, 0.5, 10},
		{^uint64(0), 1e-300, 10},
	}
	for _, tt := range tests {
		if got := capacityScore(tt.free, tt.divisor); got != tt.want {
			t.Errorf("capacityScore(%d, %v) = %d, want %d", tt.free, tt.divisor, got, tt.want)
		}
	}
}

func TestRequestErrors(t *testing.T) {
	h := newTestHandler(t, DefaultConfig())
	tests := []struct {
		name, method, path, body string
		want                     int
		wantText                 string
	}{
		{
			"malformed JSON predicate",
			http.MethodPost,
			"/predicate",
			`{"Pod":`,
			http.StatusBadRequest,
			"decode ExtenderArgs",
		},
		{
			"malformed JSON prioritize",
			http.MethodPost,
			"/prioritize",
			`[1,2]`,
			http.StatusBadRequest,
			"decode ExtenderArgs",
		},
		{"no pod", http.MethodPost, "/predicate", `{"Nodes":{"items":[]}}`, http.StatusBadRequest, "no Pod"},
		{
			"node names only",
			http.MethodPost,
			"/prioritize",
			`{"Pod":{},"NodeNames":["a"]}`,
			http.StatusBadRequest,
			"nodeCacheCapable: false",
		},
		{"wrong method", http.MethodGet, "/predicate", "", http.StatusMethodNotAllowed, ""},
		{"unknown verb", http.MethodPost, "/bind", `{}`, http.StatusNotFound, ""},
		{"status", http.MethodGet, "/status", "", http.StatusOK, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := call(t, h, tt.method, tt.path, []byte(tt.body))
			if rec.Code != tt.want || !strings.Contains(rec.Body.String(), tt.wantText) {
				t.Errorf("%d %q, want %d with %q", rec.Code, rec.Body, tt.want, tt.wantText)
			}
		})
	}
}

func TestNewHandlerRefusesBadDivisors(t *testing.T) {
	for _, cfg := range []Config{
		{DefaultDivisor: 0},
		{DefaultDivisor: 1, Divisors: map[string]float64{"ssd": -1}},
	} {
		if _, err := NewHandler(cfg, logr.Discard()); err == nil {
			t.Errorf("NewHandler(%+v) accepted", cfg)
		}
	}
}

// TestCallsAreLogged checks that each filter and score call logs the pod as namespace/name, which
// is how an operator (and the e2e suite) sees that kube-scheduler calls the extender.
func TestCallsAreLogged(t *testing.T) {
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	h, err := NewHandler(DefaultConfig(), log)
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"/predicate", "/prioritize"} {
		lines = nil
		if rec := call(
			t,
			h,
			http.MethodPost,
			verb,
			argsBody(t, pod("ssd", "1"), node("a")),
		); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", verb, rec.Code)
		}
		if len(lines) != 1 || !strings.Contains(lines[0], `"pod"="ns/p"`) {
			t.Errorf("%s logged %q, want one line naming pod ns/p", verb, lines)
		}
	}
}
