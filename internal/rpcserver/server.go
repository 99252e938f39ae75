// Package rpcserver serves gRPC services on a unix socket, every call logged with its latency and
// its request and response stripped of secrets: the one server of the CSI services, the kubelet
// plugin registration and the standalone lvmd.
package rpcserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
)

// DefaultGracePeriod bounds how long Start waits for running calls when it stops.
const DefaultGracePeriod = 10 * time.Second

// Server serves gRPC services on a unix socket. Register services on GRPC before calling Start.
type Server struct {
	// GRPC is the server the services are registered on; it logs every call (UnaryLogger).
	GRPC *grpc.Server
	// Path is the unix socket path.
	Path string
	// GracePeriod bounds the graceful stop; running calls are cancelled after it.
	GracePeriod time.Duration
}

// New returns a Server for endpoint ("unix:///path", "unix:/path" or "/path") whose calls are
// logged to log (UnaryLogger, StreamLogger). opts are passed to grpc.NewServer after those
// interceptors; interceptors they chain run inside the logger.
func New(endpoint string, log logr.Logger, opts ...grpc.ServerOption) (*Server, error) {
	path, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	opts = append([]grpc.ServerOption{
		grpc.ChainUnaryInterceptor(UnaryLogger(log)),
		grpc.ChainStreamInterceptor(StreamLogger(log)),
	}, opts...)
	return &Server{GRPC: grpc.NewServer(opts...), Path: path, GracePeriod: DefaultGracePeriod}, nil
}

// ParseEndpoint returns the socket path of a unix endpoint.
func ParseEndpoint(endpoint string) (string, error) {
	path := endpoint
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
		path = strings.TrimPrefix(endpoint, "unix://")
	case strings.HasPrefix(endpoint, "unix:"):
		path = strings.TrimPrefix(endpoint, "unix:")
	case strings.Contains(endpoint, "://"):
		return "", fmt.Errorf("endpoint %q: only unix sockets are supported", endpoint)
	}
	if path == "" {
		return "", fmt.Errorf("endpoint %q: empty socket path", endpoint)
	}
	return path, nil
}

// NeedLeaderElection is false: every replica serves its own sidecars, which elect among themselves.
func (s *Server) NeedLeaderElection() bool { return false }

// Start listens on the socket (removing a stale socket file left by a previous process) and serves
// until ctx is done, then stops gracefully. It has the signature of a controller-runtime Runnable.
func (s *Server) Start(ctx context.Context) error {
	lis, err := Listen(s.Path)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- s.GRPC.Serve(lis) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve gRPC on %s: %w", s.Path, err)
	case <-ctx.Done():
	}
	s.stop()
	if err := <-errc; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("serve gRPC on %s: %w", s.Path, err)
	}
	return nil
}

// stop stops gracefully, and forcibly once GracePeriod has passed.
func (s *Server) stop() {
	done := make(chan struct{})
	go func() {
		s.GRPC.GracefulStop()
		close(done)
	}()
	grace := s.GracePeriod
	if grace <= 0 {
		grace = DefaultGracePeriod
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.GRPC.Stop()
		<-done
	}
}

// Listen creates the parent directory of path, removes a stale socket at path and listens on it. It
// refuses to remove anything that is not a socket.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("stat socket %s: %w", path, err)
	case fi.Mode()&fs.ModeSocket == 0:
		return nil, fmt.Errorf("socket path %s exists and is not a socket", path)
	default:
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	return lis, nil
}
