package operator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestClusterID(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "5e1f-77"}}
	got, err := ClusterID(t.Context(), fake.NewClientBuilder().WithObjects(ns).Build())
	if err != nil || got != "5e1f-77" {
		t.Errorf("clusterID = %q, %v", got, err)
	}
	_, err = ClusterID(t.Context(), fake.NewClientBuilder().Build())
	if !apierrors.IsNotFound(err) {
		t.Errorf("clusterID without kube-system = %v, want NotFound", err)
	}
}
