package operator

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The operator reads its own Pod to learn the image the node agent runs.
// +kubebuilder:rbac:groups="",namespace=lvms-system,resources=pods,verbs=get

// operatorContainer is the name of the operator's container in its Deployment.
const operatorContainer = "operator"

// errNoNodeImage says how to tell the operator which image the node agent runs.
var errNoNodeImage = errors.New("the node agent's image is unknown: set --node-image (or LVMS_NODE_IMAGE), " +
	"or run the operator in a pod with POD_NAME set and a container named " + operatorContainer)

// OwnImage returns the image of the operator's own container: the node agent DaemonSet runs the
// same image, so an install that pins the operator image (by digest, a kustomize `images:` entry,
// Helm values) pins the node agent too.
func OwnImage(ctx context.Context, r client.Reader, namespace, podName string) (string, error) {
	if podName == "" {
		return "", errNoNodeImage
	}
	pod := &corev1.Pod{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: podName}, pod); err != nil {
		return "", fmt.Errorf("read own pod %s/%s for the node agent image: %w", namespace, podName, err)
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == operatorContainer {
			return c.Image, nil
		}
	}
	return "", fmt.Errorf("own pod %s/%s: %w", namespace, podName, errNoNodeImage)
}
