package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// Prober is the CSI Identity Probe; the identity server (internal/csi/identity) implements it.
type Prober interface {
	Probe(ctx context.Context, req *csi.ProbeRequest) (*csi.ProbeResponse, error)
}

// DefaultProbeTimeout bounds one probe when ProbeCheck is given no timeout.
const DefaultProbeTimeout = 5 * time.Second

// errNotReady: the plugin answered the probe with ready = false.
var errNotReady = errors.New("CSI plugin is not ready")

// ProbeCheck is a health check that calls the CSI Identity Probe in process, as the livenessprobe
// sidecar would over the socket: healthy when the plugin answers ready (an absent ready counts as
// ready, as in the CSI spec). Add it to the manager, whose health endpoint then serves it under
// /healthz: mgr.AddHealthzCheck("csi", nodeagent.ProbeCheck(identityServer, 0)).
func ProbeCheck(p Prober, timeout time.Duration) healthz.Checker {
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), timeout)
		defer cancel()
		resp, err := p.Probe(ctx, &csi.ProbeRequest{})
		switch {
		case err != nil:
			return fmt.Errorf("CSI probe: %w", err)
		case resp.GetReady() != nil && !resp.GetReady().GetValue():
			return errNotReady
		}
		return nil
	}
}
