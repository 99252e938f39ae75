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

// setWebhook installs (on) or removes the LVMCluster webhook configuration and waits until the
// apiserver acts on it, probing with an LVMCluster outside the operator namespace (which only the
// webhook refuses).
func setWebhook(t *testing.T, on bool) {
	t.Helper()
	ctx := context.Background()
	var err error
	if on {
		cfg := webhookConfig.DeepCopy()
		cfg.ResourceVersion, cfg.UID = "", ""
		err = k8s.Create(ctx, cfg)
	} else {
		err = removeWebhookConfig(ctx)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("set webhook %v: %v", on, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		probe := sampleCluster(t)
		probe.Namespace = "default"
		err := k8s.Create(ctx, probe)
		if err == nil {
			_ = k8s.Delete(ctx, probe)
		}
		refused := err != nil && strings.Contains(err.Error(), "operator namespace")
		return refused == on, nil
	})
	warnings.take()
	if err != nil {
		t.Fatalf("the apiserver did not pick up webhook=%v: %v", on, err)
	}
}

func removeWebhookConfig(ctx context.Context) error {
	cfg := webhookConfig.DeepCopy()
	cfg.ResourceVersion = ""
	if err := k8s.Delete(ctx, cfg); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove webhook configuration: %w", err)
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
