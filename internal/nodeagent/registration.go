package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/rpcserver"
)

// Kubelet plugin registration defaults (TopoLVM's paths).
const (
	// DefaultRegistrationSocket is where the kubelet's plugin watcher finds the driver.
	DefaultRegistrationSocket = "/var/lib/kubelet/plugins_registry/" + driver.Name + "-reg.sock"
	// DefaultCSIEndpoint is the CSI socket as the kubelet sees it.
	DefaultCSIEndpoint = "/var/lib/kubelet/plugins/" + driver.Name + "/node/csi-topolvm.sock"
	// supportedVersion is the CSI version the kubelet is told the driver speaks.
	supportedVersion = "1.0.0"
)

// RegistrationOptions configure a Registration.
type RegistrationOptions struct {
	// SocketPath is the registration socket (default DefaultRegistrationSocket). Its directory must
	// be the kubelet's plugins_registry directory as mounted into the agent.
	SocketPath string
	// Endpoint is the CSI node socket path as the kubelet sees it, on the host (default
	// DefaultCSIEndpoint).
	Endpoint string
	// GracePeriod bounds the graceful stop of the server (default lvmcsi.DefaultGracePeriod).
	GracePeriod time.Duration
	// Ready, when set, holds the registration back until it returns true (CapacityPublished), for
	// at most Wait; errors count as false. Nil or a Wait of 0 registers at once.
	Ready func(context.Context) (bool, error)
	Wait  time.Duration
}

// RegistrationStatus is what the kubelet last reported about the registration.
type RegistrationStatus struct {
	// Reported is false until the kubelet has called NotifyRegistrationStatus.
	Reported   bool
	Registered bool
	// Error is the kubelet's reason when Registered is false.
	Error string
}

// Registration serves the kubelet's plugin registration API (pluginregistration/v1) on a unix
// socket: GetInfo tells the kubelet the driver's name, CSI endpoint and version, and the kubelet
// reports the outcome with NotifyRegistrationStatus. It replaces the node-driver-registrar sidecar.
// Start serves it as a manager Runnable; stopping removes the socket, which deregisters the driver.
type Registration struct {
	registerapi.UnimplementedRegistrationServer

	socket   string
	endpoint string
	grace    time.Duration
	ready    func(context.Context) (bool, error)
	wait     time.Duration

	mu     sync.Mutex
	status RegistrationStatus
}

// NewRegistration returns the registration server.
func NewRegistration(o RegistrationOptions) *Registration {
	if o.SocketPath == "" {
		o.SocketPath = DefaultRegistrationSocket
	}
	if o.Endpoint == "" {
		o.Endpoint = DefaultCSIEndpoint
	}
	if o.GracePeriod <= 0 {
		o.GracePeriod = rpcserver.DefaultGracePeriod
	}
	return &Registration{socket: o.SocketPath, endpoint: o.Endpoint, grace: o.GracePeriod, ready: o.Ready, wait: o.Wait}
}

// GetInfo identifies the driver to the kubelet as a CSI plugin.
func (r *Registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              driver.Name,
		Endpoint:          r.endpoint,
		SupportedVersions: []string{supportedVersion},
	}, nil
}

// NotifyRegistrationStatus records and logs the kubelet's verdict.
func (r *Registration) NotifyRegistrationStatus(
	ctx context.Context,
	st *registerapi.RegistrationStatus,
) (*registerapi.RegistrationStatusResponse, error) {
	r.mu.Lock()
	r.status = RegistrationStatus{Reported: true, Registered: st.GetPluginRegistered(), Error: st.GetError()}
	r.mu.Unlock()
	log := ctrl.LoggerFrom(ctx).WithValues("driver", driver.Name, "endpoint", r.endpoint)
	if st.GetPluginRegistered() {
		log.Info("Kubelet registered the CSI driver")
	} else {
		log.Error(errors.New(st.GetError()), "Kubelet failed to register the CSI driver")
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// Status returns the kubelet's last report.
func (r *Registration) Status() RegistrationStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// NeedLeaderElection is false: every node agent registers with its own kubelet.
func (r *Registration) NeedLeaderElection() bool { return false }

// Start serves the registration API on the socket until ctx ends, once Ready allows it or Wait
// has passed. Calls are logged with the logger of ctx.
func (r *Registration) Start(ctx context.Context) error {
	if !WaitToRegister(ctx, r.ready, r.wait) {
		return nil // stopped while waiting
	}
	srv, err := rpcserver.New(r.socket, ctrl.LoggerFrom(ctx).WithName("plugin-registration"))
	if err != nil {
		return fmt.Errorf("plugin registration server: %w", err)
	}
	srv.GracePeriod = r.grace
	registerapi.RegisterRegistrationServer(srv.GRPC, r)
	if err := srv.Start(ctx); err != nil {
		return fmt.Errorf("plugin registration server: %w", err)
	}
	return nil
}

// WaitToRegister blocks until ready returns true (errors count as false) or bound has passed, and
// logs which; it returns false when ctx ended first. A nil ready or a bound of 0 returns at once.
// Registration.Start waits with it; so does the scale benchmark's simulated kubelet.
func WaitToRegister(ctx context.Context, ready func(context.Context) (bool, error), bound time.Duration) bool {
	if ready == nil || bound <= 0 {
		return true
	}
	log := ctrl.LoggerFrom(ctx).WithValues("driver", driver.Name)
	start := time.Now()
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, registrationPoll, bound, true, func(ctx context.Context) (bool, error) {
		ok, err := ready(ctx)
		lastErr = err
		return ok, nil
	})
	switch {
	case ctx.Err() != nil:
		return false
	case err != nil:
		kv := []any{"waited", bound}
		if lastErr != nil {
			kv = append(kv, "lastError", lastErr.Error())
		}
		log.Info("Registering with the kubelet before the node's capacity is published", kv...)
	default:
		log.Info("Registering with the kubelet: the node's capacity is published",
			"waited", time.Since(start).Round(time.Millisecond))
	}
	return true
}
