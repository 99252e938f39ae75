package snapmeta

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// Locator finds the node agent endpoint (host:port) that serves the metadata of a snapshot: the
// SnapshotMetadata endpoint of the node that holds its LV. An unknown snapshot is a gRPC NotFound.
type Locator interface {
	Locate(ctx context.Context, snapshotID string) (node, addr string, err error)
}

// Proxy is the driver's SnapshotMetadata service as the external-snapshot-metadata sidecar calls it
// (on the controller's CSI socket): it forwards each call to the node agent of the node that holds
// the snapshots, over mutual TLS, and relays the stream message by message (nothing is collected;
// a slow client slows the node's read, which its hold deadline bounds).
type Proxy struct {
	csi.UnimplementedSnapshotMetadataServer
	locate Locator
	dial   func(ctx context.Context, addr string) (*grpc.ClientConn, error)
}

// NewProxy returns the proxy; its calls to the nodes use the client certificate and the node CA of
// certDir (ClientTLS), read at each call.
func NewProxy(locate Locator, certDir string) *Proxy {
	return &Proxy{locate: locate, dial: func(_ context.Context, addr string) (*grpc.ClientConn, error) {
		cfg, err := ClientTLS(certDir)
		if err != nil {
			return nil, err
		}
		return grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	}}
}

// GetMetadataAllocated forwards the call to the node of snapshot_id.
func (p *Proxy) GetMetadataAllocated(
	req *csi.GetMetadataAllocatedRequest,
	out csi.SnapshotMetadata_GetMetadataAllocatedServer,
) error {
	if req.GetSnapshotId() == "" {
		return status.Error(codes.InvalidArgument, "snapshot_id is required")
	}
	ctx := out.Context()
	_, c, closeConn, err := p.client(ctx, req.GetSnapshotId())
	if err != nil {
		return err
	}
	defer closeConn()
	in, err := c.GetMetadataAllocated(ctx, req)
	if err != nil {
		return err
	}
	return relay(in.Recv, out.Send)
}

// GetMetadataDelta forwards the call to the node of the target snapshot; a base snapshot on another
// node cannot be of the same volume.
func (p *Proxy) GetMetadataDelta(
	req *csi.GetMetadataDeltaRequest,
	out csi.SnapshotMetadata_GetMetadataDeltaServer,
) error {
	if req.GetBaseSnapshotId() == "" || req.GetTargetSnapshotId() == "" {
		return status.Error(codes.InvalidArgument, "base_snapshot_id and target_snapshot_id are required")
	}
	ctx := out.Context()
	baseNode, _, err := p.locate.Locate(ctx, req.GetBaseSnapshotId())
	if err != nil {
		return err
	}
	targetNode, c, closeConn, err := p.client(ctx, req.GetTargetSnapshotId())
	if err != nil {
		return err
	}
	defer closeConn()
	if baseNode != targetNode {
		return status.Errorf(codes.InvalidArgument,
			"base snapshot %s is on node %s and target snapshot %s on node %s: not snapshots of one volume",
			req.GetBaseSnapshotId(), baseNode, req.GetTargetSnapshotId(), targetNode)
	}
	in, err := c.GetMetadataDelta(ctx, req)
	if err != nil {
		return err
	}
	return relay(in.Recv, out.Send)
}

// client connects to the node agent of snapshot id and returns the node's name, the client and
// the function that closes the connection.
func (p *Proxy) client(ctx context.Context, id string) (string, csi.SnapshotMetadataClient, func(), error) {
	node, addr, err := p.locate.Locate(ctx, id)
	if err != nil {
		return "", nil, nil, err
	}
	conn, err := p.dial(ctx, addr)
	if err != nil {
		return "", nil, nil, status.Errorf(
			codes.Unavailable,
			"connect to the node agent of %s at %s: %v",
			node,
			addr,
			err,
		)
	}
	return node, csi.NewSnapshotMetadataClient(conn), func() { _ = conn.Close() }, nil
}

// relay passes every message of the node's stream on until it ends; the node's status (or the
// client's failure to receive) is returned as it is.
func relay[M any](recv func() (M, error), send func(M) error) error {
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if _, ok := status.FromError(err); ok {
				return err
			}
			return status.Error(codes.Unavailable, fmt.Sprintf("stream from the node agent: %v", err))
		}
		if err := send(m); err != nil {
			return err
		}
	}
}
