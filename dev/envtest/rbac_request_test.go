package envtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// probeName is the name of the objects the privilege requests address; none exists, so a granted
// get, update, patch or delete ends in NotFound, and every write is a dry run.
const probeName = "rbac-probe"

// privilegeCase is one request a service account makes, and whether RBAC must let it through.
type privilegeCase struct {
	// verb is the RBAC verb, sent as its HTTP request (writes with dryRun=All); "apply" is a
	// server-side apply patch, authorized as patch and, for a new object, create. Verbs without a
	// request of their own (bind, escalate, impersonate) are asked with a SelfSubjectAccessReview.
	verb string
	// group and resource ("pods/exec" for a subresource) as in an RBAC rule.
	group, resource string
	// namespace of the request: "" for cluster-scoped resources, or all namespaces for list and watch.
	namespace string
	// name of the object; probeName when empty.
	name string
	// url is a non-resource URL (/metrics); group and resource are then empty.
	url string
	// body of create, update and apply; a minimal object of the resource's kind when nil.
	body    any
	allowed bool
}

// String is the case as the privilege lists print it.
func (c privilegeCase) String() string {
	if c.url != "" {
		return c.verb + " " + c.url
	}
	s := c.verb + " " + c.resource
	if c.group != "" {
		s += "." + c.group
	}
	if c.name != "" {
		s += " " + c.name
	}
	switch {
	case c.namespace != "":
		s += " in " + c.namespace
	case c.verb == "list" || c.verb == "watch":
		s += " (all namespaces or cluster-scoped)"
	}
	return s
}

// outcome is what the API server answered.
type outcome struct {
	// allowed: the request got past authorization (success, or an error only a handler returns).
	// forbidden: the RBAC authorizer refused it. Neither: an unexpected answer, a test failure.
	allowed, forbidden bool
	detail             string
}

// impersonator makes requests as one service account of the operator namespace.
type impersonator struct {
	user   string
	raw    rest.Interface
	c      client.Client
	mapper meta.RESTMapper
}

// newImpersonator returns clients of the suite's apiserver that act as service account name in
// testNamespace, with the groups the apiserver gives every service account.
func newImpersonator(t *testing.T, name string) *impersonator {
	t.Helper()
	return newImpersonatorWithExtra(t, name, nil)
}

// newImpersonatorWithExtra is newImpersonator with user extras, such as those the apiserver derives
// from a token bound to a pod and its node.
func newImpersonatorWithExtra(t *testing.T, name string, extra map[string][]string) *impersonator {
	t.Helper()
	user := "system:serviceaccount:" + testNamespace + ":" + name
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: user,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + testNamespace, "system:authenticated"},
		Extra:    extra,
	}
	c, err := client.New(cfg, client.Options{Scheme: k8s.Scheme(), Mapper: k8s.RESTMapper()})
	if err != nil {
		t.Fatalf("impersonating client: %v", err)
	}
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	raw, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		t.Fatalf("impersonating REST client: %v", err)
	}
	return &impersonator{user: user, raw: raw, c: c, mapper: k8s.RESTMapper()}
}

// do makes the request of c and classifies the answer.
func (p *impersonator) do(ctx context.Context, c privilegeCase) outcome {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if needsReview(c) {
		return p.review(ctx, c)
	}
	got := p.classify(p.request(ctx, c))
	if got.detail == "" {
		got.detail = "OK"
		if c.verb != "get" && c.verb != "list" && c.verb != "watch" {
			got.detail = "OK (dry run)"
		}
	}
	return got
}

// needsReview reports whether the verb has no request of its own (or not at this path).
func needsReview(c privilegeCase) bool {
	if c.url != "" {
		return c.verb != "get" || strings.HasSuffix(c.url, "*")
	}
	if c.group == "*" || strings.Contains(c.resource, "*") {
		return true // a wildcard of a rule has no path
	}
	switch c.verb {
	case "get", "create", "update", "patch", "apply", "delete":
		return false
	case "list", "watch", "deletecollection":
		return strings.Contains(c.resource, "/") // a subresource has no collection
	}
	return true
}

// request sends c's HTTP request.
func (p *impersonator) request(ctx context.Context, c privilegeCase) error {
	if c.url != "" {
		return p.raw.Get().AbsPath(c.url).Do(ctx).Error()
	}
	gvr, kind := p.resolve(c)
	path := []string{"/apis", c.group, gvr.Version}
	if c.group == "" {
		path = []string{"/api", gvr.Version}
	}
	if c.namespace != "" {
		path = append(path, "namespaces", c.namespace)
	}
	path = append(path, gvr.Resource)
	_, sub, _ := strings.Cut(c.resource, "/")
	name := c.name
	if name == "" {
		name = probeName
	}
	// A create of one name (a rule with resourceNames) is authorized by that name only when the
	// request names it: a server-side apply that creates the object, as the operator makes it.
	namedCreate := c.verb == "create" && c.name != ""
	if sub != "" || namedCreate ||
		(c.verb != "create" && c.verb != "list" && c.verb != "watch" && c.verb != "deletecollection") {
		path = append(path, name)
	}
	if sub != "" {
		path = append(path, sub)
	}
	// A list or watch of one name (a rule with resourceNames) is authorized by that name when it
	// selects it with the metadata.name field selector, as an informer of that one object does.
	get := p.raw.Get().AbsPath(path...)
	if c.name != "" && (c.verb == "list" || c.verb == "watch") {
		get = get.Param("fieldSelector", "metadata.name="+c.name)
	}
	switch c.verb {
	case "get", "list":
		return get.Do(ctx).Error()
	case "watch":
		s, err := get.Param("watch", "true").Param("timeoutSeconds", "1").Stream(ctx)
		if err == nil {
			_ = s.Close()
		}
		return err
	case "delete", "deletecollection":
		return p.raw.Delete().AbsPath(path...).Param("dryRun", "All").Do(ctx).Error()
	case "patch":
		return p.raw.Patch("application/merge-patch+json").AbsPath(path...).Param("dryRun", "All").
			Body([]byte("{}")).Do(ctx).Error()
	}
	body, err := json.Marshal(bodyOf(c, gvr, kind, name))
	if err != nil {
		return fmt.Errorf("encode the body of %s: %w", c, err)
	}
	req := p.raw.Post().SetHeader("Content-Type", "application/json")
	switch c.verb {
	case "update":
		req = p.raw.Put().SetHeader("Content-Type", "application/json")
	case "apply": // JSON is YAML
		req = p.raw.Patch("application/apply-patch+yaml").Param("fieldManager", "rbac-test").Param("force", "true")
	case "create":
		if namedCreate {
			req = p.raw.Patch("application/apply-patch+yaml").Param("fieldManager", "rbac-test").
				Param("force", "true")
		}
	}
	return req.AbsPath(path...).Param("dryRun", "All").Body(body).Do(ctx).Error()
}

// resolve finds the served version and the kind of c's resource; a group the apiserver does not
// serve (security.openshift.io here) is asked at v1, where authorization still decides first.
func (p *impersonator) resolve(c privilegeCase) (schema.GroupVersionResource, string) {
	base, _, _ := strings.Cut(c.resource, "/")
	gvr, err := p.mapper.ResourceFor(schema.GroupVersionResource{Group: c.group, Resource: base})
	if err != nil {
		return schema.GroupVersionResource{Group: c.group, Version: "v1", Resource: base}, "Unknown"
	}
	gvk, err := p.mapper.KindFor(gvr)
	if err != nil {
		return gvr, "Unknown"
	}
	return gvr, gvk.Kind
}

// bodyOf is c's body, or a minimal object of the kind.
func bodyOf(c privilegeCase, gvr schema.GroupVersionResource, kind, name string) any {
	if c.body != nil {
		return c.body
	}
	return map[string]any{
		"apiVersion": gvr.GroupVersion().String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": name},
	}
}

// classify sorts the answer to a request: the RBAC authorizer's refusal names the user and says
// "cannot"; a refusal by anything else (admission) is unexpected here.
func (p *impersonator) classify(err error) outcome {
	switch {
	case err == nil:
		return outcome{allowed: true}
	case apierrors.IsForbidden(err):
		if strings.Contains(err.Error(), fmt.Sprintf("User %q cannot ", p.user)) {
			return outcome{forbidden: true, detail: "Forbidden"}
		}
		return outcome{detail: "forbidden, but not by RBAC: " + err.Error()}
	case apierrors.IsNotFound(err), apierrors.IsInvalid(err), apierrors.IsAlreadyExists(err),
		apierrors.IsConflict(err), apierrors.IsBadRequest(err), apierrors.IsMethodNotSupported(err):
		return outcome{allowed: true, detail: string(apierrors.ReasonForError(err)) + " (past authorization)"}
	}
	return outcome{detail: "unexpected answer: " + err.Error()}
}

// review asks the apiserver, as the account, whether it may do c (a SelfSubjectAccessReview).
func (p *impersonator) review(ctx context.Context, c privilegeCase) outcome {
	r := &authorizationv1.SelfSubjectAccessReview{}
	if c.url != "" {
		r.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: c.url, Verb: c.verb}
	} else {
		base, sub, _ := strings.Cut(c.resource, "/")
		r.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Verb: c.verb, Group: c.group, Resource: base, Subresource: sub, Namespace: c.namespace, Name: c.name,
		}
	}
	if err := p.c.Create(ctx, r); err != nil {
		return outcome{detail: "SelfSubjectAccessReview: " + err.Error()}
	}
	if r.Status.Allowed {
		return outcome{allowed: true, detail: "allowed (SelfSubjectAccessReview)"}
	}
	return outcome{forbidden: true, detail: "denied (SelfSubjectAccessReview)"}
}
