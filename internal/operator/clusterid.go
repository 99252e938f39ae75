package operator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups="",resources=namespaces,resourceNames=kube-system,verbs=get

// ClusterID returns the identity of the cluster: the UID of its kube-system namespace, which lives
// as long as the cluster does. The node agents tag every VG and LV with it.
func ClusterID(ctx context.Context, r client.Reader) (string, error) {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, types.NamespacedName{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", fmt.Errorf("read namespace %s for the cluster identity: %w", metav1.NamespaceSystem, err)
	}
	if ns.UID == "" {
		return "", fmt.Errorf("namespace %s has no UID", metav1.NamespaceSystem)
	}
	return string(ns.UID), nil
}
