package rbacdoc

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Grant is one role as a binding gives it to subjects.
type Grant struct {
	// BindingKind and BindingName name the ClusterRoleBinding or RoleBinding.
	BindingKind, BindingName string
	// RoleKind and RoleName name the role the binding refers to.
	RoleKind, RoleName string
	// Namespace is where the rules apply: "" for a ClusterRoleBinding (every namespace and the
	// cluster-scoped resources), the binding's namespace for a RoleBinding.
	Namespace string
	// Subjects are the binding's subjects, namespaces defaulted as the authorizer does.
	Subjects []rbacv1.Subject
	// Rules are the role's rules; Known is false when the role is not in the set (a role the
	// cluster provides, such as system:auth-delegator), and then Rules is nil.
	Rules []rbacv1.PolicyRule
	Known bool
}

// Attributes are the attributes of a resource request, as the authorizer sees them.
type Attributes struct {
	Verb, Group, Resource, Name string
	// Namespace is the request's namespace, "" for cluster-scoped resources or all namespaces.
	Namespace string
}

// AllGrants returns every binding of the set with the rules of the role it refers to.
func (s *Set) AllGrants() []Grant {
	var out []Grant
	for _, b := range s.ClusterRoleBindings {
		out = append(out, s.grant("ClusterRoleBinding", b.Name, "", b.RoleRef, b.Subjects))
	}
	for _, b := range s.RoleBindings {
		out = append(out, s.grant("RoleBinding", b.Name, b.Namespace, b.RoleRef, b.Subjects))
	}
	return out
}

// grant resolves one binding.
func (s *Set) grant(kind, name, namespace string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) Grant {
	g := Grant{BindingKind: kind, BindingName: name, RoleKind: ref.Kind, RoleName: ref.Name, Namespace: namespace}
	for _, sub := range subjects {
		if sub.Kind == rbacv1.ServiceAccountKind && sub.Namespace == "" {
			sub.Namespace = namespace
		}
		g.Subjects = append(g.Subjects, sub)
	}
	switch ref.Kind {
	case "ClusterRole":
		if i := slices.IndexFunc(
			s.ClusterRoles,
			func(r rbacv1.ClusterRole) bool { return r.Name == ref.Name },
		); i >= 0 {
			g.Rules, g.Known = s.ClusterRoles[i].Rules, true
		}
	case "Role":
		i := slices.IndexFunc(
			s.Roles,
			func(r rbacv1.Role) bool { return r.Name == ref.Name && r.Namespace == namespace },
		)
		if i >= 0 {
			g.Rules, g.Known = s.Roles[i].Rules, true
		}
	}
	return g
}

// Grants returns the grants that reach the service account namespace/name: bindings naming it,
// its user name, or the groups every service account of the namespace is in.
func (s *Set) Grants(namespace, name string) []Grant {
	var out []Grant
	for _, g := range s.AllGrants() {
		if slices.ContainsFunc(g.Subjects, func(sub rbacv1.Subject) bool { return appliesTo(sub, namespace, name) }) {
			out = append(out, g)
		}
	}
	return out
}

// appliesTo reports whether a subject covers the service account namespace/name.
func appliesTo(sub rbacv1.Subject, namespace, name string) bool {
	switch sub.Kind {
	case rbacv1.ServiceAccountKind:
		return sub.Namespace == namespace && sub.Name == name
	case rbacv1.UserKind:
		return sub.Name == "system:serviceaccount:"+namespace+":"+name
	case rbacv1.GroupKind:
		return slices.Contains(
			[]string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
			sub.Name,
		)
	}
	return false
}

// Allows reports whether one of the grants permits the request: the static reading of the
// manifests, which the envtest suite checks against the API server's own answer.
func Allows(grants []Grant, a Attributes) bool {
	for _, g := range grants {
		if g.Namespace != "" && g.Namespace != a.Namespace {
			continue
		}
		if slices.ContainsFunc(g.Rules, func(r rbacv1.PolicyRule) bool { return ruleAllows(r, a) }) {
			return true
		}
	}
	return false
}

// ruleAllows matches one rule as the RBAC authorizer does: verb, API group, resource (with
// "*" and "*/subresource"), and resource names when the rule lists any.
func ruleAllows(r rbacv1.PolicyRule, a Attributes) bool {
	if !hasOrStar(r.Verbs, a.Verb) || !hasOrStar(r.APIGroups, a.Group) {
		return false
	}
	resource := slices.ContainsFunc(r.Resources, func(res string) bool {
		if res == rbacv1.ResourceAll || res == a.Resource {
			return true
		}
		_, sub, ok := strings.Cut(a.Resource, "/")
		return ok && res == "*/"+sub
	})
	return resource && (len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, a.Name))
}

// hasOrStar reports whether list holds v or the wildcard.
func hasOrStar(list []string, v string) bool {
	return slices.Contains(list, v) || slices.Contains(list, "*")
}
