package nodeagent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// DefaultRegistrationWait bounds how long the agent waits for its node's capacity before it
// registers with the kubelet all the same.
const DefaultRegistrationWait = 2 * time.Minute

// registrationPoll is how often the registration checks whether it may start.
const registrationPoll = 250 * time.Millisecond

// CapacityPublished returns a check of whether Node node carries a capacity annotation for each
// device class classes returns, and there is at least one: the operator answers the
// csi-provisioner's GetCapacity from these annotations. The provisioner publishes a node's
// CSIStorageCapacity as soon as the kubelet lists the driver on the node's CSINode, and corrects it
// only at its next poll; registering after this check passes makes the first object right. On an
// agent's restart the annotations of the previous run are there, and the check passes at once.
func CapacityPublished(
	r client.Reader, node string, classes func(context.Context) ([]string, error),
) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		want, err := classes(ctx)
		if err != nil || len(want) == 0 {
			return false, err
		}
		n := &corev1.Node{}
		if err := r.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
			return false, fmt.Errorf("get node %s: %w", node, err)
		}
		for _, c := range want {
			if _, ok := n.Annotations[driver.CapacityAnnotation(c)]; !ok {
				return false, nil
			}
		}
		return true, nil
	}
}
