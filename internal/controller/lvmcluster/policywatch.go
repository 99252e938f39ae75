package lvmcluster

import (
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// The operator watches the node agent policy and its binding, so that one deleted or changed by
// someone else is written again at once, as the StorageClasses are: an older chart that carried
// them itself deletes them on `helm upgrade`, and without them the node agents are bounded by RBAC
// alone. The cache lists and watches only that one name, which is all the operator's RBAC allows.

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,resourceNames=lvms-node-agent-own-node,verbs=list;watch

// NodeAgentPolicyServed reports whether the API server serves ValidatingAdmissionPolicy v1: only
// then can the manager's cache hold the policy (NodeAgentPolicyCache).
func NodeAgentPolicyServed(cfg *rest.Config) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, fmt.Errorf("discovery client: %w", err)
	}
	return policyServed(dc)
}

// policyServed looks for the policy's kind in its group version.
func policyServed(dc discovery.DiscoveryInterface) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(ValidatingAdmissionPolicyGVK.GroupVersion().String())
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("discover %s: %w", ValidatingAdmissionPolicyGVK.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Kind == ValidatingAdmissionPolicyGVK.Kind {
			return true, nil
		}
	}
	return false, nil
}

// NodeAgentPolicyCache is the manager's cache setting for the policy and its binding: the objects
// of their one name only.
func NodeAgentPolicyCache() map[client.Object]cache.ByObject {
	byName := cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", NodeAgentPolicyName)}
	return map[client.Object]cache.ByObject{
		&admissionv1.ValidatingAdmissionPolicy{}:        byName,
		&admissionv1.ValidatingAdmissionPolicyBinding{}: byName,
	}
}

// watchNodeAgentPolicy adds watches of the policy and its binding to b (when the API server serves
// them: Options.NodeAgentPolicy).
func watchNodeAgentPolicy(b *builder.Builder, toAll handler.EventHandler) *builder.Builder {
	ours := builder.WithPredicates(named(func(n string) bool { return n == NodeAgentPolicyName }))
	return b.Watches(&admissionv1.ValidatingAdmissionPolicy{}, toAll, ours).
		Watches(&admissionv1.ValidatingAdmissionPolicyBinding{}, toAll, ours)
}
