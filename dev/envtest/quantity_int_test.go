package envtest

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestQuantityAsInteger: quantities written as plain integers (bytes) are accepted, as with
// Kubernetes' own quantities, and validated the same way.
func TestQuantityAsInteger(t *testing.T) {
	tests := []struct {
		name      string
		chunkSize string
		want      []string
	}{
		{"128Ki as integer", "131072", nil},
		{"32Ki as integer", "32768", []string{"thinPoolConfig.chunkSize", "must be between 64Ki and 1Gi"}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `apiVersion: lvm.topolvm.io/v1alpha1
kind: LVMCluster
metadata: {name: ` + uniqueName("intqty") + `, namespace: ` + testNamespace + `}
spec:
  storage:
    deviceClasses:
    - name: vg1
      thinPoolConfig: {name: tp, overprovisionRatio: 2, chunkSize: ` + tt.chunkSize + `}
`
			var u unstructured.Unstructured
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				t.Fatalf("yaml: %v", err)
			}
			err := k8s.Create(ctx, &u)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				_ = k8s.Delete(ctx, &u)
				return
			}
			if err == nil {
				_ = k8s.Delete(ctx, &u)
			}
			assertRejected(t, err, tt.want...)
		})
	}
}
