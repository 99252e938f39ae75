package scheduler

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/go-logr/logr"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// FuzzParseConfig checks that any configuration file either fails to parse or yields divisors a
// score can divide by.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"", "listen: :9251\ndefault-divisor: 2\ndivisors: {ssd: 0.5}\n", "default-divisor: -1\n",
		"divisors: {a: .nan}\n", "[", "divisors: 3\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _, err := ParseConfig(data)
		if err != nil {
			return
		}
		if _, err := NewHandler(cfg, logr.Discard()); err != nil {
			t.Fatalf("ParseConfig accepted %q, NewHandler refused it: %v", data, err)
		}
	})
}

// FuzzPredicate sends arbitrary bodies, with arbitrary annotations on the pod and the nodes, to
// both verbs: the answer is 200 or 400, and a filter keeps at most the nodes it was given.
func FuzzPredicate(f *testing.F) {
	f.Add([]byte(`{"Pod":{"metadata":{"annotations":{"capacity.topolvm.io/ssd":"10"}}},` +
		`"Nodes":{"items":[{"metadata":{"name":"a","annotations":{"capacity.topolvm.io/ssd":"18446744073709551615"}}}]}}`))
	f.Add(
		[]byte(
			`{"Pod":{"metadata":{"annotations":{"capacity.topolvm.io/":"-1","capacity.topolvm.io/x":"9223372036854775808"}}},` +
				`"Nodes":{"items":[{"metadata":{"annotations":{"capacity.topolvm.io/x":"1e3"}}}]}}`,
		),
	)
	f.Add([]byte(`{"Pod":null,"Nodes":null}`))
	h, err := NewHandler(DefaultConfig(), logr.Discard())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var args extenderv1.ExtenderArgs
		// The handler decodes the first JSON value of the body, as json.Decoder does.
		inputOK := json.NewDecoder(bytes.NewReader(body)).Decode(&args) == nil && args.Pod != nil && args.Nodes != nil
		for _, verb := range []string{"/predicate", "/prioritize"} {
			rec := call(t, h, http.MethodPost, verb, body)
			if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
				t.Fatalf("%s: status %d", verb, rec.Code)
			}
			if (rec.Code == http.StatusOK) != inputOK {
				t.Fatalf("%s: status %d for valid input %v", verb, rec.Code, inputOK)
			}
			if verb != "/predicate" || rec.Code != http.StatusOK {
				continue
			}
			var res extenderv1.ExtenderFilterResult
			if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
				t.Fatalf("decode the answer: %v", err)
			}
			if res.Nodes == nil || len(res.Nodes.Items) > len(args.Nodes.Items) {
				t.Fatalf("filter kept %v of %d nodes", res.Nodes, len(args.Nodes.Items))
			}
		}
	})
}
