package lvmcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// withUIDs builds the fake client so that every object gets a UID when it is created or first
// applied, as the API server gives one (the fake gives none): the operator tells the operands it
// made by their UID (madeByOperator).
func withUIDs(b *fake.ClientBuilder) client.WithWatch {
	var n atomic.Int64
	newUID := func() types.UID { return types.UID(fmt.Sprintf("fake-uid-%d", n.Add(1))) }
	return b.WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetUID() == "" {
				obj.SetUID(newUID())
			}
			return c.Create(ctx, obj, opts...)
		},
		Apply: func(
			ctx context.Context,
			c client.WithWatch,
			ac runtime.ApplyConfiguration,
			opts ...client.ApplyOption,
		) error {
			if err := c.Apply(ctx, ac, opts...); err != nil {
				return err
			}
			raw, err := json.Marshal(ac)
			if err != nil {
				return err
			}
			answer := &unstructured.Unstructured{}
			if err := answer.UnmarshalJSON(raw); err != nil {
				return err
			}
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(answer.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(answer), live); err != nil {
				return err
			}
			if live.GetUID() == "" {
				live.SetUID(newUID())
				if err := c.Update(ctx, live); err != nil {
					return err
				}
			}
			answer.SetUID(live.GetUID())
			answer.SetAnnotations(live.GetAnnotations())
			if raw, err = answer.MarshalJSON(); err != nil {
				return err
			}
			return json.Unmarshal(raw, ac)
		},
	}).Build()
}
