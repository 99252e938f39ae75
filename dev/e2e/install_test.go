//go:build e2e

// These tests need the product installed from config/default, as lvms-dev up installs it.

package e2e

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// TestNodesAndOperator: every node is Ready and runs its pods on containerd (a real kubelet, not a
// stand-in), and the operator's Deployment, installed from config/default, is Available.
func TestNodesAndOperator(t *testing.T) {
	e := newEnv(t)
	var nodes corev1.NodeList
	if err := e.c.List(e.ctx(), &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if rt := n.Status.NodeInfo.ContainerRuntimeVersion; !ready || !strings.HasPrefix(rt, "containerd://") {
			t.Errorf("node %s: Ready %t, runtime %q; want Ready on containerd", n.Name, ready, rt)
		}
	}
	var d appsv1.Deployment
	if err := e.c.Get(e.ctx(), client.ObjectKey{Namespace: operatorNS, Name: "lvms-operator"}, &d); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status != corev1.ConditionTrue {
			t.Errorf("Deployment lvms-operator Available=%s: %s", c.Status, c.Message)
		}
	}
	if d.Status.AvailableReplicas < 1 {
		t.Errorf("Deployment lvms-operator has %d available replicas", d.Status.AvailableReplicas)
	}
}

// TestInstalledPrivileges asks the API server what the service accounts of the install may do:
// the node agent, the operator and the evacuator (config/components/evacuator, which hack/e2e.sh
// installs with lvms-dev up --evacuator) run with their own, minimal roles. The allowed rows prove
// the install's RBAC is in place (a cluster without it would deny everything and pass the rest).
func TestInstalledPrivileges(t *testing.T) {
	e := newEnv(t)
	node := "system:serviceaccount:" + operatorNS + ":lvms-node"
	operator := "system:serviceaccount:" + operatorNS + ":lvms-operator"
	evacuator := "system:serviceaccount:" + operatorNS + ":lvms-evacuator"
	tests := []struct {
		user, verb, group, resource, namespace string
		allowed                                bool
		name                                   string
	}{
		{node, "list", "", "secrets", "", false, ""},
		{node, "get", "", "secrets", operatorNS, false, ""},
		{node, "create", "apps", "daemonsets", operatorNS, false, ""},
		{node, "delete", "storage.k8s.io", "storageclasses", "", false, ""},
		{node, "update", "topolvm.io", "logicalvolumes", "", true, ""},
		{node, "patch", "", "nodes", "", true, ""},
		{operator, "list", "", "secrets", "", false, ""},
		{operator, "get", "", "secrets", operatorNS, true, ""},
		{operator, "create", "apps", "daemonsets", operatorNS, true, ""},
		{operator, "update", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", true,
			"lvms-validating-webhook-configuration"},
		{operator, "update", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", false,
			"someone-elses-webhook"},
		{operator, "create", "apps", "daemonsets", "kube-system", false, ""},
		{evacuator, "patch", "", "nodes", "", true, ""},
		{evacuator, "create", "", "pods/eviction", "default", true, ""},
		{evacuator, "delete", "", "pods", "default", false, ""},
		{evacuator, "delete", "", "persistentvolumeclaims", "default", true, ""},
		{evacuator, "create", "", "persistentvolumes", "", true, ""},
		{evacuator, "delete", "", "persistentvolumes", "", false, ""},
		{evacuator, "create", "topolvm.io", "logicalvolumes", "", true, ""},
		{evacuator, "list", "", "secrets", "", false, ""},
		{evacuator, "update", "coordination.k8s.io", "leases", operatorNS, true, ""},
		{evacuator, "update", "coordination.k8s.io", "leases", "kube-system", false, ""},
	}
	for _, tt := range tests {
		resource, subresource, _ := strings.Cut(tt.resource, "/")
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   tt.user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNS, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: tt.verb, Group: tt.group, Resource: resource, Subresource: subresource,
				Namespace: tt.namespace, Name: tt.name,
			},
		}}
		if err := e.c.Create(e.ctx(), sar); err != nil {
			t.Fatalf("SubjectAccessReview: %v", err)
		}
		where := "cluster-wide"
		if tt.namespace != "" {
			where = "in " + tt.namespace
		}
		if tt.name != "" {
			where += " named " + tt.name
		}
		if sar.Status.Allowed != tt.allowed {
			t.Errorf("%s may %s %s.%s %s: %v, want %v (%s)", tt.user, tt.verb, tt.resource, tt.group, where,
				sar.Status.Allowed, tt.allowed, sar.Status.Reason)
		}
	}
}

// TestWebhookRejectsThroughAPIServer creates a second LVMCluster: only the admission webhook knows
// about the first one, so the refusal proves the API server reaches the webhook over its
// self-managed certificate.
func TestWebhookRejectsThroughAPIServer(t *testing.T) {
	e := newEnv(t)
	second := &lvmv1alpha1.LVMCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-second", Namespace: operatorNS},
		Spec: lvmv1alpha1.LVMClusterSpec{Storage: lvmv1alpha1.Storage{DeviceClasses: []lvmv1alpha1.DeviceClass{
			{
				Name:           "other",
				Default:        true,
				ThinPoolConfig: &lvmv1alpha1.ThinPoolConfig{Name: "pool", SizePercent: 90, OverprovisionRatio: 10},
			},
		}}},
	}
	err := e.c.Create(e.ctx(), second)
	if err == nil {
		_ = e.c.Delete(e.ctx(), second)
		t.Fatal("a second LVMCluster was accepted; the webhook did not run")
	}
	if !strings.Contains(err.Error(), `admission webhook "vlvmcluster.lvm.topolvm.io" denied the request`) {
		t.Fatalf("second LVMCluster refused, but not by the webhook: %v", err)
	}
	t.Logf("refused as expected: %v", err)
}

// TestNodeAgentBoundToItsNode: the installed admission policy keeps a node agent to its own node.
// Acting as the node agent with a token bound to one node (impersonation with the user extra the
// API server takes from a bound token), a dry-run patch of that node's Node is allowed and one of
// the other node's is refused. The real agents, whose tokens the kubelet binds, wrote their own
// Nodes' capacity annotations under the same policy.
func TestNodeAgentBoundToItsNode(t *testing.T) {
	e := newEnv(t)
	nodes := e.nodes()
	if len(nodes) < 2 {
		t.Fatalf("nodes %v: the test needs two", nodes)
	}
	cfg := rest.CopyConfig(e.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + operatorNS + ":lvms-node",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNS, "system:authenticated"},
		Extra:    map[string][]string{"authentication.kubernetes.io/node-name": {nodes[0]}},
	}
	agent, err := client.New(cfg, client.Options{Scheme: e.c.Scheme(), Mapper: e.c.RESTMapper()})
	if err != nil {
		t.Fatal(err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"lvms.e2e/policy":"x"}}}`))
	own := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes[0]}}
	if err := agent.Patch(e.ctx(), own, patch, client.DryRunAll); err != nil {
		t.Fatalf("the node agent of %s may not patch its own Node: %v", nodes[0], err)
	}
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes[1]}}
	err = agent.Patch(e.ctx(), other, patch, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "lvms-node-agent-own-node") {
		t.Fatalf("the node agent of %s patching Node %s: %v, want refused by lvms-node-agent-own-node",
			nodes[0], nodes[1], err)
	}
	t.Logf("refused as expected: %v", err)
	for _, n := range nodes {
		var node corev1.Node
		if err := e.c.Get(e.ctx(), client.ObjectKey{Name: n}, &node); err != nil {
			t.Fatal(err)
		}
		if _, ok := node.Annotations["capacity.topolvm.io/thin"]; !ok {
			t.Errorf("Node %s has no capacity.topolvm.io/thin annotation: its agent could not write it (%v)",
				n, node.Annotations)
		}
	}
}

// TestNetworkPoliciesSelectEveryPod: the install's NetworkPolicies (config/network-policy and the
// components') are in place and select every running pod of the product, so every other test of
// this run exercises the product with them in place. (The dev cluster's network does not enforce
// NetworkPolicies; which ports they admit from whom is checked in
// internal/controller/lvmcluster's TestNetworkPoliciesAdmitWhatEachPodServes.)
func TestNetworkPoliciesSelectEveryPod(t *testing.T) {
	e := newEnv(t)
	var policies networkingv1.NetworkPolicyList
	if err := e.c.List(e.ctx(), &policies, client.InNamespace(operatorNS)); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := e.c.List(e.ctx(), &pods, client.InNamespace(operatorNS)); err != nil {
		t.Fatal(err)
	}
	checked := map[string]int{}
	for _, p := range pods.Items {
		name := p.Labels["app.kubernetes.io/name"]
		if !strings.HasPrefix(name, "lvms-") || name == "lvms-scheduler" || p.Status.Phase != corev1.PodRunning {
			continue // the scheduler extender runs on the host network, where policies do not apply
		}
		selected := false
		for _, np := range policies.Items {
			sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
			if err != nil {
				t.Fatal(err)
			}
			selected = selected || (sel.Matches(labels.Set(p.Labels)) &&
				slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress))
		}
		if !selected {
			t.Errorf("pod %s (%s): no NetworkPolicy selects it", p.Name, name)
		}
		checked[name]++
	}
	for _, want := range []string{"lvms-operator", "lvms-node"} {
		if checked[want] == 0 {
			t.Errorf("no running %s pod to check (checked %v)", want, checked)
		}
	}
	t.Logf("%d NetworkPolicies; running pods checked: %v", len(policies.Items), checked)
}
