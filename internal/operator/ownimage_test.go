package operator

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestOwnImage(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lvms-system", Name: "lvms-operator-abc"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "csi-provisioner", Image: "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0"},
			{Name: "operator", Image: "ghcr.io/lvm-operator/lvms@sha256:0123"},
		}},
	}
	noOperator := pod.DeepCopy()
	noOperator.Name = "other"
	noOperator.Spec.Containers = noOperator.Spec.Containers[:1]
	c := fake.NewClientBuilder().WithObjects(pod, noOperator).Build()
	tests := []struct {
		name, pod, want string
		wantErr         bool
	}{
		{name: "operator container", pod: "lvms-operator-abc", want: "ghcr.io/lvm-operator/lvms@sha256:0123"},
		{name: "no pod name", pod: "", wantErr: true},
		{name: "pod missing", pod: "gone", wantErr: true},
		{name: "no operator container", pod: "other", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OwnImage(context.Background(), c, "lvms-system", tt.pod)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("OwnImage() = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
			if tt.pod != "gone" && err != nil && !errors.Is(err, errNoNodeImage) {
				t.Fatalf("error %v does not say how to set the image", err)
			}
		})
	}
}
