package envtest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/dev/internal/rbacdoc"
)

// TestServiceAccountPrivileges installs the RBAC of config/rbac (as kustomize builds it, into the
// operator namespace), impersonates the node agent's and the operator's service accounts, and
// makes real requests as each: the table's allowed requests get past authorization, its denied
// ones are refused by the RBAC authorizer, every rule the manifests bind to the account is
// granted, and the table agrees with the manifests. With -v it prints what each account may and
// may not do, and the account's rules as a SelfSubjectRulesReview reports them.
func TestServiceAccountPrivileges(t *testing.T) {
	ctx := t.Context()
	set, err := rbacdoc.Load(filepath.Join("..", "..", "config", "rbac"), testNamespace)
	if err != nil {
		t.Fatal(err)
	}
	ensureNamespace(ctx, t, testNamespace)
	// Before the roles exist the node agent may not list LVMClusters, after they do it may: the
	// apiserver authorizes with RBAC (not AlwaysAllow) and sees the impersonated account, so the
	// refusals below are RBAC's.
	baseline := allow("list", lvmGroup, "lvmclusters", testNamespace)
	node := newImpersonator(t, "lvms-node")
	waitForOutcome(ctx, t, node, baseline, false)
	installRBAC(ctx, t, set)
	waitForOutcome(ctx, t, node, baseline, true)

	accounts := []struct {
		name  string
		cases []privilegeCase
	}{
		{"lvms-node", nodeAgentCases()},
		{"lvms-operator", operatorCases()},
	}
	for _, sa := range accounts {
		t.Run(sa.name, func(t *testing.T) { checkAccount(t, set, sa.name, sa.cases) })
	}
}

// checkAccount runs the table of one account, then every rule bound to it, and logs the result.
func checkAccount(t *testing.T, set *rbacdoc.Set, name string, cases []privilegeCase) {
	ctx := t.Context()
	p := newImpersonator(t, name)
	grants := set.Grants(testNamespace, name)
	if len(grants) == 0 {
		t.Fatalf("config/rbac binds no role to %s", name)
	}
	var can, cannot []string
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			if inManifests := allowedByManifests(grants, c); inManifests != c.allowed {
				t.Errorf("the table says allowed=%t, config/rbac says %t: %s", c.allowed, inManifests, c)
			}
			got := p.do(ctx, c)
			line := c.String() + " → " + got.detail
			if got.allowed {
				can = append(can, line)
			} else {
				cannot = append(cannot, line)
			}
			if (c.allowed && !got.allowed) || (!c.allowed && !got.forbidden) {
				t.Errorf("%s as %s: %s, want allowed=%t", c, name, got.detail, c.allowed)
			}
		})
	}
	var rules []string
	t.Run("every rule of config/rbac is granted", func(t *testing.T) {
		rules = checkEveryRule(ctx, t, p, grants)
	})
	t.Logf("%s MAY (%d requests of the table):\n  %s", name, len(can), strings.Join(can, "\n  "))
	t.Logf("%s MAY NOT (%d requests of the table):\n  %s", name, len(cannot), strings.Join(cannot, "\n  "))
	t.Logf("%s: every rule bound to it in config/rbac, one request per verb and resource:\n  %s",
		name, strings.Join(rules, "\n  "))
	logRulesReview(ctx, t, p)
}

// allowedByManifests is the static reading of the manifests; apply needs patch and create (the
// object is new).
func allowedByManifests(grants []rbacdoc.Grant, c privilegeCase) bool {
	name := c.name
	if name == "" && c.verb != "create" && c.verb != "list" && c.verb != "watch" {
		name = probeName
	}
	a := rbacdoc.Attributes{Verb: c.verb, Group: c.group, Resource: c.resource, Name: name, Namespace: c.namespace}
	if c.verb != "apply" {
		return rbacdoc.Allows(grants, a)
	}
	a.Verb = "patch"
	patch := rbacdoc.Allows(grants, a)
	a.Verb, a.Name = "create", ""
	return patch && rbacdoc.Allows(grants, a)
}

// checkEveryRule makes one request per verb, API group, resource (and resource name) of every
// rule bound to the account, where the binding applies, and fails for each that is not granted:
// a rule in the manifests that never reaches the account (a wrong subject, a missing binding) is
// caught here. It returns one summary line per rule.
func checkEveryRule(ctx context.Context, t *testing.T, p *impersonator, grants []rbacdoc.Grant) []string {
	var lines []string
	for _, g := range grants {
		if !g.Known {
			lines = append(lines, fmt.Sprintf("%s %s: provided by the cluster, not checked", g.RoleKind, g.RoleName))
			continue
		}
		for _, rule := range g.Rules {
			cases := ruleCases(p, g.Namespace, rule)
			granted := 0
			for _, c := range cases {
				if got := p.do(ctx, c); got.allowed {
					granted++
				} else {
					t.Errorf("%s %s grants %s, but as %s: %s", g.RoleKind, g.RoleName, c, p.user, got.detail)
				}
			}
			what := strings.Join(rule.NonResourceURLs, ",")
			if what == "" {
				what = strings.Join(rule.Resources, ",") + " (" + strings.Join(rule.APIGroups, ",") + ")"
			}
			lines = append(lines, fmt.Sprintf("%s %s %s: %s %v: %d/%d granted",
				g.RoleKind, g.RoleName, scopeOf(g), what, rule.Verbs, granted, len(cases)))
		}
	}
	return lines
}

// scopeOf says where a grant applies.
func scopeOf(g rbacdoc.Grant) string {
	if g.Namespace == "" {
		return "(cluster-wide)"
	}
	return "(in " + g.Namespace + ")"
}

// ruleCases expands a rule into requests. A namespaced resource granted cluster-wide is asked in
// "default" (another namespace than the operator's) and listed across all namespaces.
func ruleCases(p *impersonator, namespace string, rule rbacv1.PolicyRule) []privilegeCase {
	var out []privilegeCase
	for _, url := range rule.NonResourceURLs {
		for _, verb := range rule.Verbs {
			out = append(out, privilegeCase{verb: verb, url: url, allowed: true})
		}
	}
	names := rule.ResourceNames
	if len(names) == 0 {
		names = []string{""}
	}
	for _, group := range rule.APIGroups {
		for _, res := range rule.Resources {
			ns := namespace
			if ns == "" && p.namespaced(group, res) {
				ns = "default"
			}
			for _, verb := range rule.Verbs {
				for _, name := range names {
					c := privilegeCase{
						verb:      verb,
						group:     group,
						resource:  res,
						namespace: ns,
						name:      name,
						allowed:   true,
					}
					if namespace == "" && (verb == "list" || verb == "watch") {
						c.namespace = ""
					}
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// namespaced reports whether the apiserver serves the resource per namespace; a resource it does
// not serve counts as cluster-scoped.
func (p *impersonator) namespaced(group, resource string) bool {
	gvr, kind := p.resolve(privilegeCase{group: group, resource: resource})
	m, err := p.mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind}, gvr.Version)
	return err == nil && m.Scope.Name() == meta.RESTScopeNameNamespace
}

// logRulesReview logs the account's rules in the operator namespace as the apiserver reports them
// to the account itself (SelfSubjectRulesReview): the roles of config/rbac plus what the cluster
// gives every authenticated user.
func logRulesReview(ctx context.Context, t *testing.T, p *impersonator) {
	t.Helper()
	r := &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: testNamespace},
	}
	if err := p.c.Create(ctx, r); err != nil {
		t.Errorf("SelfSubjectRulesReview as %s: %v", p.user, err)
		return
	}
	var lines []string
	for _, rr := range r.Status.ResourceRules {
		line := fmt.Sprintf("%v on %v in groups %q", rr.Verbs, rr.Resources, rr.APIGroups)
		if len(rr.ResourceNames) > 0 {
			line += fmt.Sprintf(" named %v", rr.ResourceNames)
		}
		lines = append(lines, line)
	}
	for _, nr := range r.Status.NonResourceRules {
		lines = append(lines, fmt.Sprintf("%v on URLs %v", nr.Verbs, nr.NonResourceURLs))
	}
	if r.Status.Incomplete {
		lines = append(lines, "(incomplete: "+r.Status.EvaluationError+")")
	}
	t.Logf("%s in %s, by SelfSubjectRulesReview:\n  %s", p.user, testNamespace, strings.Join(lines, "\n  "))
}

// ensureNamespace creates the namespace unless another test already did.
func ensureNamespace(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// installRBAC applies every object of the set as the admin and deletes them when the test ends, so
// that the rest of the package runs without them.
func installRBAC(ctx context.Context, t *testing.T, set *rbacdoc.Set) {
	t.Helper()
	applyAsAdmin(ctx, t, set.Objects, "rbac-privileges-test")
}

// applyAsAdmin applies objs (server-side, as fieldOwner) as the admin and deletes them when the test
// ends. Applying (not creating) makes a rerun in the same apiserver take the manifests as they are
// now.
func applyAsAdmin(ctx context.Context, t *testing.T, objs []*unstructured.Unstructured, fieldOwner string) {
	t.Helper()
	for _, o := range objs {
		u := o.DeepCopy()
		err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner(fieldOwner), client.ForceOwnership)
		if err != nil {
			t.Fatalf("apply %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		t.Cleanup(func() {
			if err := k8s.Delete(context.Background(), u); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
			}
		})
	}
}

// waitForOutcome waits until the apiserver's authorizer, whose caches follow the RBAC objects
// shortly after they change, answers c with allowed (or forbidden), and fails the test otherwise.
func waitForOutcome(ctx context.Context, t *testing.T, p *impersonator, c privilegeCase, allowed bool) {
	t.Helper()
	var last outcome
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true,
		func(ctx context.Context) (bool, error) {
			last = p.do(ctx, c)
			return last.allowed == allowed && last.forbidden != allowed, nil
		})
	if err != nil {
		t.Fatalf("%s as %s: %s, want allowed=%t (the apiserver must authorize with RBAC and the "+
			"installed roles): %v", c, p.user, last.detail, allowed, err)
	}
}
