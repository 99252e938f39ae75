// Command csi-registrar registers a CSI node plugin with the kubelet's plugin watcher, in place of
// kubernetes-csi's node-driver-registrar, which the Go module proxy does not serve at a v2 version.
// It is dev tooling for the TopoLVM peer of make bench-peer (docs/performance.md); the product's
// node agent registers itself and never runs it.
//
// It waits until the driver's CSI socket accepts connections, then serves the kubelet's plugin
// registration API (pluginregistration/v1) on <registration-dir>/<driver>-reg.sock: GetInfo names
// the driver, its CSI endpoint as the kubelet sees it and the CSI version. When the kubelet reports
// a failed registration it exits 1, so that the container's restart registers again (as
// node-driver-registrar does). SIGTERM removes the socket, which deregisters the driver.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// options are the command's flags.
type options struct {
	driver, endpoint, csiSocket, registrationDir string
	wait                                         time.Duration
}

func main() { os.Exit(mainCode()) }

// mainCode parses the flags, runs the command and returns its exit code.
func mainCode() int {
	var o options
	flag.StringVar(&o.driver, "driver-name", "topolvm.io", "name of the CSI driver")
	flag.StringVar(&o.endpoint, "kubelet-registration-path",
		"/var/lib/kubelet/plugins/topolvm.io/node/csi-topolvm.sock",
		"the driver's CSI socket as the kubelet sees it on the node")
	flag.StringVar(&o.csiSocket, "csi-address", "",
		"the CSI socket in this container, waited for first (default: --kubelet-registration-path)")
	flag.StringVar(&o.registrationDir, "registration-dir", "/registration",
		"the kubelet's plugins_registry directory in this container")
	flag.DurationVar(&o.wait, "wait", 5*time.Minute, "how long to wait for the CSI socket")
	flag.Parse()
	if o.csiSocket == "" {
		o.csiSocket = o.endpoint
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "csi-registrar:", err)
		return 1
	}
	return 0
}

// run waits for the CSI socket and serves the registration API until ctx ends or the kubelet
// reports a failed registration.
func run(ctx context.Context, o options) error {
	if err := waitForSocket(ctx, o.csiSocket, o.wait); err != nil {
		return err
	}
	socket := filepath.Join(o.registrationDir, o.driver+"-reg.sock")
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale registration socket: %w", err)
	}
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", socket, err)
	}
	defer os.Remove(socket)
	failed := make(chan error, 1)
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, &registration{o: o, failed: failed})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	fmt.Fprintf(os.Stderr, "csi-registrar: serving the registration of %s (endpoint %s) on %s\n",
		o.driver, o.endpoint, socket)
	select {
	case <-ctx.Done():
		srv.GracefulStop()
		return nil
	case err := <-failed:
		srv.GracefulStop() // the kubelet's call gets its answer first
		return err
	case err := <-served:
		return fmt.Errorf("registration server: %w", err)
	}
}

// waitForSocket polls until a unix socket at path accepts a connection.
func waitForSocket(ctx context.Context, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "unix", path)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CSI socket %s: %w (last: %w)", path, ctx.Err(), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// registration answers the kubelet's plugin watcher.
type registration struct {
	registerapi.UnimplementedRegistrationServer

	o      options
	failed chan<- error
}

// GetInfo identifies the driver to the kubelet as a CSI plugin.
func (r *registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.o.driver,
		Endpoint:          r.o.endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

// NotifyRegistrationStatus ends the command when the kubelet could not register the driver.
func (r *registration) NotifyRegistrationStatus(
	_ context.Context,
	st *registerapi.RegistrationStatus,
) (*registerapi.RegistrationStatusResponse, error) {
	if st.GetPluginRegistered() {
		fmt.Fprintf(os.Stderr, "csi-registrar: the kubelet registered %s\n", r.o.driver)
	} else {
		select {
		case r.failed <- fmt.Errorf("the kubelet did not register %s: %s", r.o.driver, st.GetError()):
		default:
		}
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
