package lvmcluster

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// NodeAgentPolicyName names the ValidatingAdmissionPolicy, and its binding, that keep every node
// agent to its own node's objects. RBAC grants the agent its writes by resource only (any Node,
// any LogicalVolume, any LVMVolumeGroup); the policy narrows each write to the node the agent's
// service account token is bound to. The operator writes it on every install path (kustomize,
// Helm, OLM: OLM installs no admission policy from a bundle) before the node agents exist.
const NodeAgentPolicyName = "lvms-node-agent-own-node"

// ConditionNodeAgentPolicy is the LVMCluster condition saying whether the policy is in force.
const ConditionNodeAgentPolicy = "NodeAgentPolicy"

// Reasons of ConditionNodeAgentPolicy.
const (
	ReasonPolicyInstalled   = "PolicyInstalled"
	ReasonPolicyUnsupported = "PolicyUnsupported"
)

// nodeNameExtra is the user extra the API server derives from a service account token bound to a
// pod: the name of the pod's node (Kubernetes 1.30 and later, as ValidatingAdmissionPolicy v1).
const nodeNameExtra = "authentication.kubernetes.io/node-name"

// ValidatingAdmissionPolicyGVK is the kind of the node agent policy.
var ValidatingAdmissionPolicyGVK = schema.GroupVersionKind{
	Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy",
}

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,resourceNames=lvms-node-agent-own-node,verbs=get;update;patch;delete

// nodeAgentValidations are the policy's rules, each for one kind the agent writes. An LVMVolumeGroup
// is the operator's projection of a device class: an agent may add or remove only its own node's
// cleanup finalizer and wiped marker, never the spec (deviceSelector.paths, the wipe opt-in), any
// other node's marker, the labels, owners or status. Otherwise one agent's token could make every
// other node wipe disks.
var nodeAgentValidations = []struct{ rule, message string }{
	{
		"variables.node != ''",
		`'the node agent\'s token is not bound to a node (no ` + nodeNameExtra +
			`): it may write no node\'s objects'`,
	},
	{
		"request.resource.resource != 'nodes' || variables.objects.all(o, o.metadata.name == variables.node)",
		"'the node agent of ' + variables.node + ' may write only its own Node'",
	},
	{
		"request.resource.resource != 'logicalvolumes' || " +
			"variables.objects.all(o, has(o.spec.nodeName) && o.spec.nodeName == variables.node)",
		"'the node agent of ' + variables.node + ' may write only LogicalVolumes of its node'",
	},
	{
		"request.resource.resource != 'lvmvolumegroupnodestatuses' || " +
			"variables.objects.all(o, o.metadata.name == variables.node)",
		"'the node agent of ' + variables.node + ' may write only the LVMVolumeGroupNodeStatus named after its node'",
	},
	{
		"request.resource.resource != 'lvmvolumegroups' || (request.operation == 'UPDATE' && " +
			"object.spec == oldObject.spec && " +
			"has(object.status) == has(oldObject.status) && (!has(object.status) || object.status == oldObject.status) && " +
			"variables.labels == variables.oldLabels && " +
			"variables.owners == variables.oldOwners && " +
			"variables.annotations.all(k, k == variables.ownMarker || " +
			"(k in variables.oldAnnotations && variables.oldAnnotations[k] == variables.annotations[k])) && " +
			"variables.oldAnnotations.all(k, k == variables.ownMarker || k in variables.annotations) && " +
			"variables.finalizers.all(f, f == variables.ownFinalizer || f in variables.oldFinalizers) && " +
			"variables.oldFinalizers.all(f, f == variables.ownFinalizer || f in variables.finalizers))",
		"'the node agent of ' + variables.node + ' may change an LVMVolumeGroup only by its own finalizer ' + " +
			"variables.ownFinalizer + ' and marker ' + variables.ownMarker + ': never the spec, labels, owners, " +
			"status or another node\\'s finalizer or marker'",
	},
}

// NodeAgentPolicy is the ValidatingAdmissionPolicy the operator writes for LVMCluster c, bounding
// the node agent's service account of namespace, and its binding.
func NodeAgentPolicy(
	c *lvmv1alpha1.LVMCluster,
	namespace string,
) (*admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration, *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration) {
	return nodeAgentPolicy(c, namespace), nodeAgentPolicyBinding(c)
}

// nodeAgentPolicy is the ValidatingAdmissionPolicy for the node agent's service account in namespace.
func nodeAgentPolicy(
	c *lvmv1alpha1.LVMCluster,
	namespace string,
) *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration {
	writes := []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete}
	rule := func(group, version string, resources ...string) *admissionv1ac.NamedRuleWithOperationsApplyConfiguration {
		return admissionv1ac.NamedRuleWithOperations().WithOperations(writes...).
			WithAPIGroups(group).WithAPIVersions(version).WithResources(resources...)
	}
	variable := func(name, expr string) *admissionv1ac.VariableApplyConfiguration {
		return admissionv1ac.Variable().WithName(name).WithExpression(expr)
	}
	orEmpty := func(field, empty string) string {
		return fmt.Sprintf("has(%[1]s) ? %[1]s : %[2]s", field, empty)
	}
	spec := admissionv1ac.ValidatingAdmissionPolicySpec().
		WithFailurePolicy(admissionv1.Fail).
		WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
			rule("", "v1", "nodes", "nodes/status"),
			rule("topolvm.io", "*", "logicalvolumes", "logicalvolumes/status"),
			rule("lvm.topolvm.io", "*", "lvmvolumegroupnodestatuses", "lvmvolumegroupnodestatuses/status"),
			rule("lvm.topolvm.io", "*", "lvmvolumegroups", "lvmvolumegroups/status", "lvmvolumegroups/finalizers"),
		)).
		WithMatchConditions(admissionv1ac.MatchCondition().WithName("node-agent").WithExpression(
			fmt.Sprintf(
				"request.userInfo.username == 'system:serviceaccount:%s:%s'",
				namespace,
				NodeServiceAccountName,
			),
		)).
		WithVariables(
			variable("node", fmt.Sprintf("has(request.userInfo.extra) && '%[1]s' in request.userInfo.extra && "+
				"size(request.userInfo.extra['%[1]s']) == 1 ? request.userInfo.extra['%[1]s'][0] : ''", nodeNameExtra)),
			variable("objects", "[object, oldObject].filter(o, o != null)"),
			variable("ownFinalizer", fmt.Sprintf("'%s' + variables.node", lvmv1alpha1.CleanupFinalizerPrefix)),
			variable("ownMarker", fmt.Sprintf("'%s' + variables.node", lvmv1alpha1.WipedAnnotationPrefix)),
			variable("annotations", orEmpty("object.metadata.annotations", "{}")),
			variable("oldAnnotations", orEmpty("oldObject.metadata.annotations", "{}")),
			variable("labels", orEmpty("object.metadata.labels", "{}")),
			variable("oldLabels", orEmpty("oldObject.metadata.labels", "{}")),
			variable("finalizers", orEmpty("object.metadata.finalizers", "[]")),
			variable("oldFinalizers", orEmpty("oldObject.metadata.finalizers", "[]")),
			variable("owners", orEmpty("object.metadata.ownerReferences", "[]")),
			variable("oldOwners", orEmpty("oldObject.metadata.ownerReferences", "[]")),
		)
	for _, v := range nodeAgentValidations {
		spec.WithValidations(admissionv1ac.Validation().WithExpression(v.rule).WithMessageExpression(v.message))
	}
	return admissionv1ac.ValidatingAdmissionPolicy(NodeAgentPolicyName).WithLabels(ownerLabels(c)).WithSpec(spec)
}

func nodeAgentPolicyBinding(
	c *lvmv1alpha1.LVMCluster,
) *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration {
	return admissionv1ac.ValidatingAdmissionPolicyBinding(NodeAgentPolicyName).WithLabels(ownerLabels(c)).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(NodeAgentPolicyName).
			WithValidationActions(admissionv1.Deny))
}

// applyNodeAgentPolicy writes the policy and its binding. An API server that does not serve
// ValidatingAdmissionPolicy v1 (before Kubernetes 1.30) cannot bound the agents: the condition
// and a warning event say so, and the agents run bounded by RBAC alone.
func applyNodeAgentPolicy(ctx context.Context, s *scope) error {
	if !s.opts.NodeAgentPolicy {
		msg := "the API server does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy " +
			"(Kubernetes 1.30 and later): each node agent can write every node's Nodes, LogicalVolumes and " +
			"LVMVolumeGroups; upgrade the cluster to bound each agent to its own node"
		if !meta.IsStatusConditionFalse(s.cluster.Status.Conditions, ConditionNodeAgentPolicy) {
			s.recorder.Eventf(s.cluster, nil, corev1.EventTypeWarning, ReasonPolicyUnsupported, "Apply", "%s", msg)
		}
		s.setCondition(metav1.Condition{Type: ConditionNodeAgentPolicy, Status: metav1.ConditionFalse,
			Reason: ReasonPolicyUnsupported, Message: msg})
		return nil
	}
	policy, binding := NodeAgentPolicy(s.cluster, s.opts.Namespace)
	if err := applyOperand(ctx, s.client, policy); err != nil {
		return fmt.Errorf("apply ValidatingAdmissionPolicy %s: %w", NodeAgentPolicyName, err)
	}
	if err := applyOperand(ctx, s.client, binding); err != nil {
		return fmt.Errorf("apply ValidatingAdmissionPolicyBinding %s: %w", NodeAgentPolicyName, err)
	}
	s.setCondition(metav1.Condition{Type: ConditionNodeAgentPolicy, Status: metav1.ConditionTrue,
		Reason: ReasonPolicyInstalled, Message: "ValidatingAdmissionPolicy " + NodeAgentPolicyName +
			" keeps each node agent to its own node's objects"})
	return nil
}

// removeNodeAgentPolicy deletes the policy and its binding once the node agents are gone.
func removeNodeAgentPolicy(ctx context.Context, s *scope) (bool, error) {
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{}
	binding.Name = NodeAgentPolicyName
	bindingGone, err := deleteObject(ctx, s.client, binding)
	if err != nil {
		return false, err
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{}
	policy.Name = NodeAgentPolicyName
	policyGone, err := deleteObject(ctx, s.client, policy)
	return bindingGone && policyGone, err
}
