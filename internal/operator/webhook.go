package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
)

// The self-signed certificate mode keeps its certificate in a Secret of the operator namespace and
// injects the CA into the validating and mutating webhook configurations (it may update only those
// two, by name: renaming them with --webhook-configuration or --mutating-webhook-configuration needs
// the same names in the role).
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,resourceNames=lvms-validating-webhook-configuration;lvms-mutating-webhook-configuration,verbs=update;patch
// +kubebuilder:rbac:groups="",namespace=lvms-system,resources=secrets,verbs=get;list;watch;create;update;patch

// setupWebhookCerts returns a channel closed once the webhook serving certificate is in place: at
// once in external mode, after the rotator has written it in self mode (Setup has checked the
// mode with Options.Validate).
func setupWebhookCerts(mgr ctrl.Manager, o Options) (<-chan struct{}, error) {
	ready := make(chan struct{})
	if o.WebhookCertMode == "external" {
		close(ready)
		return ready, nil
	}
	secret := types.NamespacedName{Namespace: o.Namespace, Name: "lvms-webhook-server-cert"}
	if err := mgr.Add(certFiles{
		reader:  mgr.GetAPIReader(),
		secret:  secret,
		dir:     o.WebhookSelfCertDir,
		poll:    time.Second,
		refresh: time.Minute,
	}); err != nil {
		return nil, fmt.Errorf("add webhook certificate copier: %w", err)
	}
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      secret,
		CertDir:        o.WebhookSelfCertDir,
		CAName:         "lvms-ca",
		CAOrganization: "lvms",
		DNSName:        fmt.Sprintf("%s.%s.svc", o.WebhookService, o.Namespace),
		IsReady:        ready,
		Webhooks: []rotator.WebhookInfo{
			{Name: o.WebhookConfiguration, Type: rotator.Validating},
			{Name: o.MutatingWebhookConfiguration, Type: rotator.Mutating},
		},
		FieldOwner:            lvmcluster.FieldOwner,
		RequireLeaderElection: false,
	})
	if err != nil {
		return nil, fmt.Errorf("set up webhook certificate rotation: %w", err)
	}
	return ready, nil
}

// errCertNotReady is the readiness failure while the webhook certificate is being issued.
var errCertNotReady = errors.New("webhook serving certificate not written yet")

// webhookReady reports ready once the webhook server serves. It must not touch the webhook server
// before the certificate exists: asking the manager for it adds it, and a server started without
// its certificate files ends the operator.
func webhookReady(mgr ctrl.Manager, certsReady <-chan struct{}) healthz.Checker {
	return func(req *http.Request) error {
		select {
		case <-certsReady:
			return mgr.GetWebhookServer().StartedChecker()(req)
		default:
			return errCertNotReady
		}
	}
}

// delayedSetup is a manager Runnable that runs setup once ready is closed. An error from setup is
// returned from Start, which stops the manager (and so the operator) with that error. It does not
// wait for leader election: every replica serves the webhook.
type delayedSetup struct {
	ready <-chan struct{}
	what  string
	setup func() error
}

// Start waits for ready (or the end of ctx) and runs setup.
func (d delayedSetup) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-d.ready:
	}
	if err := d.setup(); err != nil {
		return fmt.Errorf("set up %s: %w", d.what, err)
	}
	return nil
}

// NeedLeaderElection is false: the setup runs on every replica.
func (delayedSetup) NeedLeaderElection() bool { return false }
