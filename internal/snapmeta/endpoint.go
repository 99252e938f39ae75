package snapmeta

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
)

// Recoverer releases metadata snapshots left by a crash; *thinmeta.Reader implements it.
type Recoverer interface {
	Recover(ctx context.Context, pools ...thinmeta.Pool) ([]thinmeta.Pool, error)
}

// EndpointOptions configure the node's SnapshotMetadata endpoint.
type EndpointOptions struct {
	// Addr is the TCP address to listen on (host:port; the pod IP's port in the cluster).
	Addr string
	// CertDir holds the serving key pair and the CA of the clients allowed (see ServerTLS).
	CertDir string
	// Node answers the calls.
	Node csi.SnapshotMetadataServer
	// Classes gives the device classes; the first configuration names the thin pools whose
	// metadata snapshot is released before the endpoint serves.
	Classes interface {
		Watch(ctx context.Context) <-chan *lvmd.Config
	}
	// Recover releases metadata snapshots left by a crash.
	Recover Recoverer
	Log     logr.Logger
}

// Endpoint serves the node's SnapshotMetadata service over TCP with mutual TLS: only the operator
// (a client certificate of the configured CA) may call it. It is a manager Runnable: Start waits for
// the device classes, releases any metadata snapshot a crashed agent left on their thin pools (no
// read of this process can hold one yet), then serves until ctx ends.
type Endpoint struct{ o EndpointOptions }

// NewEndpoint returns the endpoint.
func NewEndpoint(o EndpointOptions) (*Endpoint, error) {
	if o.Addr == "" || o.CertDir == "" || o.Node == nil || o.Classes == nil || o.Recover == nil {
		return nil, errors.New("snapshot metadata endpoint: Addr, CertDir, Node, Classes and Recover are required")
	}
	return &Endpoint{o: o}, nil
}

// Start recovers, then serves until ctx ends.
func (e *Endpoint) Start(ctx context.Context) error {
	var cfg *lvmd.Config
	for configs := e.o.Classes.Watch(ctx); cfg == nil; {
		var ok bool
		if cfg, ok = <-configs; !ok {
			return nil // ctx ended
		}
	}
	pools := ThinPools(cfg)
	released, err := e.o.Recover.Recover(ctx, pools...)
	if err != nil {
		return fmt.Errorf("release metadata snapshots left on %v: %w", pools, err)
	}
	if len(released) > 0 {
		e.o.Log.Info("Released metadata snapshots a previous agent left", "pools", released)
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", e.o.Addr)
	if err != nil {
		return fmt.Errorf("snapshot metadata endpoint: %w", err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(ServerTLS(e.o.CertDir))))
	csi.RegisterSnapshotMetadataServer(srv, e.o.Node)
	go func() {
		<-ctx.Done()
		srv.GracefulStop()
	}()
	e.o.Log.Info("Serving snapshot metadata", "address", l.Addr().String())
	if err := srv.Serve(l); err != nil {
		return fmt.Errorf("snapshot metadata endpoint: %w", err)
	}
	return nil
}

// NeedLeaderElection is false: every node agent serves its own node.
func (*Endpoint) NeedLeaderElection() bool { return false }

// ThinPools are the thin pools of the thin device classes of cfg (nil: none).
func ThinPools(cfg *lvmd.Config) []thinmeta.Pool {
	if cfg == nil {
		return nil
	}
	var out []thinmeta.Pool
	for _, dc := range cfg.DeviceClasses {
		if dc.Type == lvmd.TypeThin && dc.ThinPool != nil {
			p := thinmeta.Pool{VG: dc.VolumeGroup, Name: dc.ThinPool.Name}
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}
