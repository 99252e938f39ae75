package envtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// warningRecorder keeps the admission warnings the client receives.
type warningRecorder struct {
	mu   sync.Mutex
	seen []string
}

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, message)
}

// take returns the warnings received since the last take.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// setWebhook installs (on) or removes the LVMCluster webhook configurations and waits until the
// apiserver acts on them, probing with an LVMCluster outside the operator namespace (which only the
// validating webhook refuses) and one without a discovery policy (which only the mutating webhook
// sets).
func setWebhook(t *testing.T, on bool) {
	t.Helper()
	ctx := context.Background()
	deleteAllClusters(t) // the mutating probe must not meet the one-LVMCluster rule
	var err error
	if on {
		v, m := webhookConfig.DeepCopy(), mutatingConfig.DeepCopy()
		v.ResourceVersion, v.UID, m.ResourceVersion, m.UID = "", "", "", ""
		if err = k8s.Create(ctx, v); err == nil || apierrors.IsAlreadyExists(err) {
			err = k8s.Create(ctx, m)
		}
	} else {
		err = removeWebhookConfig(ctx)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("set webhook %v: %v", on, err)
	}
	err = wait.PollUntilContextTimeout(
		ctx,
		100*time.Millisecond,
		30*time.Second,
		true,
		func(ctx context.Context) (bool, error) {
			return webhooksActive(ctx, t) == on, nil
		},
	)
	warnings.take()
	if err != nil {
		t.Fatalf("the apiserver did not pick up webhook=%v: %v", on, err)
	}
}

// webhooksActive reports whether both webhooks act: the validating one refuses an LVMCluster outside
// the operator namespace, the mutating one sets the discovery policy of a dry-run LVMCluster.
func webhooksActive(ctx context.Context, t *testing.T) bool {
	probe := sampleCluster(t)
	probe.Namespace = "default"
	err := k8s.Create(ctx, probe)
	if err == nil {
		_ = k8s.Delete(ctx, probe)
	}
	validating := err != nil && strings.Contains(err.Error(), "operator namespace")
	probe = sampleCluster(t) // lists no disks and sets no policy
	err = k8s.Create(ctx, probe, client.DryRunAll)
	mutating := err == nil &&
		probe.Spec.Storage.DeviceClasses[0].DeviceDiscoveryPolicy == lvmv1alpha1.DeviceDiscoveryPolicyStatic
	return validating && mutating
}

func removeWebhookConfig(ctx context.Context) error {
	v, m := webhookConfig.DeepCopy(), mutatingConfig.DeepCopy()
	v.ResourceVersion, m.ResourceVersion = "", ""
	if err := k8s.Delete(ctx, v); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove webhook configuration: %w", err)
	}
	if err := k8s.Delete(ctx, m); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove mutating webhook configuration: %w", err)
	}
	return nil
}

// deleteAllClusters removes every LVMCluster, so that the one-per-cluster rule of the webhook sees a
// clean slate.
func deleteAllClusters(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range []string{testNamespace, "default"} {
		if err := k8s.DeleteAllOf(ctx, &lvmv1alpha1.LVMCluster{}, client.InNamespace(ns)); err != nil {
			t.Fatalf("delete LVMClusters in %s: %v", ns, err)
		}
	}
}
