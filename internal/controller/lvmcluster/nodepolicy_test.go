package lvmcluster

import (
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// TestApplyNodeAgentPolicy: Options.NodeAgentPolicy, found out once at start, decides whether the
// policy and its binding are written or the condition says the API server cannot bound the agents.
func TestApplyNodeAgentPolicy(t *testing.T) {
	for _, tt := range []struct {
		name      string
		served    bool
		want      metav1.ConditionStatus
		reason    string
		objects   bool
		wantEvent bool
	}{
		{name: "served: policy and binding written", served: true, want: metav1.ConditionTrue,
			reason: ReasonPolicyInstalled, objects: true},
		{name: "not served: condition and a warning, nothing written", served: false,
			want: metav1.ConditionFalse, reason: ReasonPolicyUnsupported, wantEvent: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, lvmv1alpha1.AddToScheme} {
				if err := add(s); err != nil {
					t.Fatal(err)
				}
			}
			c := &lvmv1alpha1.LVMCluster{}
			c.Name, c.Namespace, c.UID = "my-lvmcluster", "lvms-system", "uid-1"
			cl := withUIDs(fake.NewClientBuilder().WithScheme(s).WithObjects(c))
			rec := events.NewFakeRecorder(4)
			sc := &scope{client: cl, recorder: rec, cluster: c,
				opts: Options{Namespace: "lvms-system", NodeAgentPolicy: tt.served}}
			if err := applyNodeAgentPolicy(t.Context(), sc); err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(c.Status.Conditions, ConditionNodeAgentPolicy)
			if cond == nil || cond.Status != tt.want || cond.Reason != tt.reason {
				t.Fatalf("condition %s = %+v, want %s %s", ConditionNodeAgentPolicy, cond, tt.want, tt.reason)
			}
			key := client.ObjectKey{Name: NodeAgentPolicyName}
			for _, obj := range []client.Object{
				&admissionv1.ValidatingAdmissionPolicy{}, &admissionv1.ValidatingAdmissionPolicyBinding{},
			} {
				err := cl.Get(t.Context(), key, obj)
				if tt.objects && err != nil {
					t.Errorf("%T not written: %v", obj, err)
				}
				if !tt.objects && !apierrors.IsNotFound(err) {
					t.Errorf("%T: %v, want not found", obj, err)
				}
			}
			if got := len(rec.Events) > 0; got != tt.wantEvent {
				t.Errorf("event recorded = %v, want %v", got, tt.wantEvent)
			}
		})
	}
}
