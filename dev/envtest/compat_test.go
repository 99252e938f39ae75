package envtest

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// refusedBy says which layer refuses a spec.
type refusedBy int

const (
	// Zero (the default of compatCase.by): both layers accept the spec.
	_ refusedBy = iota
	// byCRD: the CRD schema and its CEL rules refuse it, with or without the webhook.
	byCRD
	// byWebhook: only the webhook refuses it; with the CRDs alone it is accepted.
	byWebhook
)

// compatCase is one row of docs/api-compat.md exercised against the apiserver: an LVMCluster is
// created (from the sample changed by create, or from doc) and, when update is set, then updated.
// The step under test is the create, or the update when there is one.
type compatCase struct {
	rule, name string
	doc        string       // a whole LVMCluster manifest instead of the sample (upstream examples)
	create     []clusterOpt // changes to the sample before the create
	update     []clusterOpt // changes before the update; nil: the case is the create
	setup      func(t *testing.T)
	by         refusedBy
	want       []string // fragments of the refusal: the field and what to do
	warn       []string // fragments of admission warnings expected with the webhook
	check      func(t *testing.T, got *lvmv1alpha1.LVMCluster, webhook bool)
}

// TestAPICompat runs every case of docs/api-compat.md twice: against the CRDs alone, and with the
// admission webhook installed.
func TestAPICompat(t *testing.T) {
	var cases []compatCase
	for _, group := range [][]compatCase{
		schemaCases(), storageClassSchemaCases(), webhookRuleCases(), thinAndLabelCases(), updateCases(), extraCases(),
		extensionCases(),
	} {
		cases = append(cases, group...)
	}
	for _, mode := range []struct {
		name    string
		webhook bool
	}{{"crds", false}, {"webhook", true}} {
		t.Run(mode.name, func(t *testing.T) {
			setWebhook(t, mode.webhook)
			if mode.webhook {
				t.Cleanup(func() { setWebhook(t, false) })
			}
			for _, tc := range cases {
				t.Run(tc.rule+" "+tc.name, func(t *testing.T) {
					deleteAllClusters(t)
					runCompatCase(t, tc, mode.webhook)
				})
			}
		})
	}
}

func runCompatCase(t *testing.T, tc compatCase, webhook bool) {
	ctx := context.Background()
	if tc.setup != nil {
		tc.setup(t)
	}
	obj := compatObject(t, tc)
	warnings.take()
	err := k8s.Create(ctx, obj)
	if err == nil {
		t.Cleanup(func() { _ = k8s.Delete(ctx, obj) })
	}
	if tc.update != nil {
		if err != nil {
			t.Fatalf("create before the update was refused: %v", err)
		}
		c, ok := obj.(*lvmv1alpha1.LVMCluster)
		if !ok {
			t.Fatal("update cases need a typed LVMCluster")
		}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			t.Fatalf("get: %v", err)
		}
		for _, o := range tc.update {
			o(c)
		}
		warnings.take()
		err = k8s.Update(ctx, c)
	}
	got := warnings.take()
	if tc.by == byCRD || (tc.by == byWebhook && webhook) {
		assertRejected(t, err, tc.want...)
		return
	}
	if err != nil {
		t.Fatalf("refused, want accepted: %v", err)
	}
	if webhook {
		assertWarnings(t, got, tc.warn)
	}
	if tc.check != nil {
		c := &lvmv1alpha1.LVMCluster{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), c); err != nil {
			t.Fatalf("get: %v", err)
		}
		tc.check(t, c, webhook)
	}
}

func compatObject(t *testing.T, tc compatCase) client.Object {
	t.Helper()
	if tc.doc == "" {
		return newCluster(t, tc.create...)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(tc.doc), &u.Object); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	u.SetName(uniqueName("doc"))
	u.SetNamespace(testNamespace)
	return u
}

func assertWarnings(t *testing.T, got, want []string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.Contains(g, w)
		}
		if !found {
			t.Errorf("no warning mentions %q; warnings: %q", w, got)
		}
	}
}
