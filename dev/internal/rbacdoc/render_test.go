package rbacdoc

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is a small config/rbac: a ClusterRole bound cluster-wide, a Role bound in the install's
// namespace (the Role and the RoleBinding name none, as in config/rbac), an aggregated role, an
// unbound non-resource role and a binding to a role the cluster provides.
const fixture = `
apiVersion: v1
kind: ServiceAccount
metadata: {name: agent}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: agent}
rules:
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, patch]
- apiGroups: [example.io]
  resources: [widgets, widgets/status]
  resourceNames: [one]
  verbs: [update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: agent}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: agent}
subjects:
- {kind: ServiceAccount, name: agent, namespace: sys}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: agent-local}
rules:
- apiGroups: [""]
  resources: [secrets]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: agent-local}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: agent-local}
subjects:
- {kind: ServiceAccount, name: agent}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: agent-delegator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
subjects:
- {kind: Group, name: "system:serviceaccounts:sys"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: scraper}
rules:
- nonResourceURLs: [/metrics]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: aggregated}
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {example.io/aggregate: "true"}
`

func TestRender(t *testing.T) {
	s, err := Decode([]byte(fixture), "sys")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(s, "fixture")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(out)
	tests := []struct {
		name, want string
	}{
		{"source named", "from fixture; do not edit"},
		{"namespace in the intro", "service accounts in `sys`"},
		{"cluster role granted cluster-wide", "| `sys/agent` | ClusterRole `agent` | cluster-wide |"},
		{"role defaulted into the namespace", "| `sys/agent` | Role `agent-local` | namespace `sys` |"},
		{
			"group subject reaches the account",
			"| `sys/agent` | ClusterRole `system:auth-delegator` (provided by the cluster) | cluster-wide |",
		},
		{"core group spelled out", `| "" (core) | nodes | get, patch | any |`},
		{"resource names", "| example.io | widgets, widgets/status | update | one |"},
		{
			"cluster role section",
			"## ClusterRole `agent`\n\nBound to service account `sys/agent` through ClusterRoleBinding `agent`, cluster-wide.",
		},
		{
			"role section",
			"## Role `agent-local` (namespace `sys`)\n\nBound to service account `sys/agent` through RoleBinding `agent-local`, namespace `sys`.",
		},
		{"non-resource URLs", "| Non-resource URLs | Verbs |\n|---|---|\n| /metrics | get |"},
		{"unbound role", "## ClusterRole `scraper`\n\nNot bound by the install"},
		{"aggregation", "Aggregates the ClusterRoles labelled `example.io/aggregate=true`."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(doc, tt.want) {
				t.Errorf("rendered page lacks %q:\n%s", tt.want, doc)
			}
		})
	}
	if strings.Contains(doc, "## ClusterRole `aggregated`\n\nNot bound by the install.\n\n| API group") {
		t.Errorf("a role without resource rules has an empty resource table:\n%s", doc)
	}
	again, err := Render(s, "fixture")
	if err != nil || !bytes.Equal(out, again) {
		t.Errorf("two renders differ (err %v)", err)
	}
}

func TestAllows(t *testing.T) {
	s, err := Decode([]byte(fixture), "sys")
	if err != nil {
		t.Fatal(err)
	}
	grants := s.Grants("sys", "agent")
	tests := []struct {
		name string
		a    Attributes
		want bool
	}{
		{"cluster role, cluster-scoped", Attributes{Verb: "patch", Resource: "nodes"}, true},
		{"verb not granted", Attributes{Verb: "delete", Resource: "nodes"}, false},
		{"subresource not granted by the resource", Attributes{Verb: "patch", Resource: "nodes/status"}, false},
		{"named resource", Attributes{Verb: "update", Group: "example.io", Resource: "widgets", Name: "one"}, true},
		{"other name", Attributes{Verb: "update", Group: "example.io", Resource: "widgets", Name: "two"}, false},
		{"named rule, no name", Attributes{Verb: "update", Group: "example.io", Resource: "widgets"}, false},
		{"role in its namespace", Attributes{Verb: "get", Resource: "secrets", Namespace: "sys"}, true},
		{"role outside its namespace", Attributes{Verb: "get", Resource: "secrets", Namespace: "kube-system"}, false},
		{"role does not reach all namespaces", Attributes{Verb: "get", Resource: "secrets"}, false},
		{"other group", Attributes{Verb: "get", Group: "apps", Resource: "nodes"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Allows(grants, tt.a); got != tt.want {
				t.Errorf("Allows(%+v) = %v, want %v", tt.a, got, tt.want)
			}
		})
	}
	if other := s.Grants("other", "agent"); len(other) != 0 {
		t.Errorf("an account of another namespace gets %d grants, want 0", len(other))
	}
}

func TestDecodeRefusesOtherKinds(t *testing.T) {
	_, err := Decode([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"), "sys")
	if err == nil || !strings.Contains(err.Error(), `unexpected kind "Secret"`) {
		t.Fatalf("Decode of a Secret: %v, want an unexpected-kind error", err)
	}
}

// TestCommittedDocIsCurrent fails when docs/rbac.md differs from what config/rbac renders (edited
// by hand, or config/rbac changed without make manifests).
func TestCommittedDocIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	want, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, OutputFile))
	if err != nil {
		t.Fatalf("%v (run make manifests)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale or edited by hand; run make manifests", OutputFile)
	}
}
