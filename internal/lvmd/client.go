package lvmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	lvmdpb "github.com/lvm-operator/lvm-operator/internal/lvmd/proto"
)

// Client is the node agent's side of lvmd's gRPC API. Its errors wrap the
// service's sentinels (ErrNotFound, ErrInsufficientCapacity, ...) mapped
// back from the status codes, so callers test them with errors.Is as with a
// local Service.
type Client struct {
	conn *grpc.ClientConn
	lv   lvmdpb.LVServiceClient
	vg   lvmdpb.VGServiceClient
}

// Dial returns a Client for the lvmd listening on the unix socket path. The
// connection is made lazily, on the first call.
func Dial(path string, opts ...grpc.DialOption) (*Client, error) {
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	conn, err := grpc.NewClient("unix://"+path, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to lvmd at %s: %w", path, err)
	}
	return &Client{conn: conn, lv: lvmdpb.NewLVServiceClient(conn), vg: lvmdpb.NewVGServiceClient(conn)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// CreateLV creates an LV (see Service.CreateLV).
func (c *Client) CreateLV(ctx context.Context, req CreateLVRequest) (LV, error) {
	resp, err := c.lv.CreateLV(ctx, &lvmdpb.CreateLVRequest{
		Name: req.Name, DeviceClass: req.DeviceClass, SizeBytes: req.Size, Tags: req.Tags,
		LvcreateOptionClass: req.LVCreateOptionClass,
	})
	if err != nil {
		return LV{}, fromStatus(err, "create LV %s", req.Name)
	}
	return lvFromProto(resp.GetVolume()), nil
}

// RemoveLV removes an LV (see Service.RemoveLV).
func (c *Client) RemoveLV(ctx context.Context, name, class string) error {
	_, err := c.lv.RemoveLV(ctx, &lvmdpb.RemoveLVRequest{Name: name, DeviceClass: class})
	return fromStatus(err, "remove LV %s", name)
}

// ResizeLV grows an LV (see Service.ResizeLV).
func (c *Client) ResizeLV(ctx context.Context, name, class string, size uint64) (LV, error) {
	resp, err := c.lv.ResizeLV(ctx, &lvmdpb.ResizeLVRequest{Name: name, DeviceClass: class, SizeBytes: size})
	if err != nil {
		return LV{}, fromStatus(err, "resize LV %s", name)
	}
	return lvFromProto(resp.GetVolume()), nil
}

// CreateSnapshot creates a snapshot (see Service.CreateSnapshot).
func (c *Client) CreateSnapshot(ctx context.Context, req SnapshotRequest) (LV, error) {
	access := lvmdpb.SnapshotAccess_SNAPSHOT_ACCESS_READ_WRITE
	if req.ReadOnly {
		access = lvmdpb.SnapshotAccess_SNAPSHOT_ACCESS_READ_ONLY
	}
	resp, err := c.lv.CreateLVSnapshot(ctx, &lvmdpb.CreateLVSnapshotRequest{
		Name: req.Name, DeviceClass: req.DeviceClass, SourceVolume: req.Source, SizeBytes: req.Size,
		Access: access, Tags: req.Tags,
	})
	if err != nil {
		return LV{}, fromStatus(err, "create snapshot %s of %s", req.Name, req.Source)
	}
	return lvFromProto(resp.GetSnapshot()), nil
}

// ListLVs lists the LVs of a device class.
func (c *Client) ListLVs(ctx context.Context, class string) ([]LV, error) {
	resp, err := c.vg.GetLVList(ctx, &lvmdpb.GetLVListRequest{DeviceClass: class})
	if err != nil {
		return nil, fromStatus(err, "list LVs of device class %q", class)
	}
	out := make([]LV, 0, len(resp.GetVolumes()))
	for _, v := range resp.GetVolumes() {
		out = append(out, lvFromProto(v))
	}
	return out, nil
}

// ChangeLV changes an LV while it is in use (see Service.ChangeLV).
func (c *Client) ChangeLV(ctx context.Context, req ChangeLVRequest) (LV, error) {
	resp, err := c.lv.ChangeLV(ctx, &lvmdpb.ChangeLVRequest{
		Name: req.Name, DeviceClass: req.DeviceClass, ReadAhead: req.ReadAhead,
	})
	if err != nil {
		return LV{}, fromStatus(err, "change LV %s", req.Name)
	}
	return lvFromProto(resp.GetVolume()), nil
}

// GetLV returns one LV lvmd made (see Service.GetLV).
func (c *Client) GetLV(ctx context.Context, name, class string) (LV, error) {
	resp, err := c.vg.GetLV(ctx, &lvmdpb.GetLVRequest{Name: name, DeviceClass: class})
	if err != nil {
		return LV{}, fromStatus(err, "get LV %s", name)
	}
	return lvFromProto(resp.GetVolume()), nil
}

// FreeBytes returns the capacity available in a device class.
func (c *Client) FreeBytes(ctx context.Context, class string) (uint64, error) {
	resp, err := c.vg.GetFreeBytes(ctx, &lvmdpb.GetFreeBytesRequest{DeviceClass: class})
	if err != nil {
		return 0, fromStatus(err, "get free bytes of device class %q", class)
	}
	return resp.GetFreeBytes(), nil
}

// Watch calls f with the capacities of all device classes, first the
// current ones, then after each change, until ctx ends (nil), the stream
// breaks or f fails (that error).
func (c *Client) Watch(ctx context.Context, f func([]Capacity) error) error {
	stream, err := c.vg.Watch(ctx, &lvmdpb.WatchRequest{})
	if err != nil {
		return fromStatus(err, "watch capacity")
	}
	for {
		resp, err := stream.Recv()
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("watch capacity: %w", io.ErrUnexpectedEOF)
		}
		if err != nil {
			return fromStatus(err, "watch capacity")
		}
		if err := f(capacitiesFromProto(resp)); err != nil {
			return err
		}
	}
}

func lvFromProto(v *lvmdpb.LogicalVolume) LV {
	return LV{
		Name: v.GetName(), DeviceClass: v.GetDeviceClass(), VolumeGroup: v.GetVolumeGroup(), Size: v.GetSizeBytes(),
		Path: v.GetPath(), Tags: v.GetTags(), Origin: v.GetOrigin(), ThinPool: v.GetThinPool(),
		ReadOnly: v.GetReadOnly(), UUID: v.GetUuid(), ReadAhead: v.GetReadAhead(),
	}
}

func capacitiesFromProto(resp *lvmdpb.WatchResponse) []Capacity {
	out := make([]Capacity, 0, len(resp.GetItems()))
	for _, it := range resp.GetItems() {
		c := Capacity{
			DeviceClass: it.GetDeviceClass(), VolumeGroup: it.GetVolumeGroup(), Ready: it.GetReady(),
			Default: it.GetDefault(), FreeBytes: it.GetFreeBytes(), SizeBytes: it.GetSizeBytes(),
			VGSizeBytes: it.GetVgSizeBytes(), VGFreeBytes: it.GetVgFreeBytes(),
		}
		if p := it.GetThinPool(); p != nil {
			c.ThinPool = &ThinPoolCapacity{
				Name: p.GetName(), SizeBytes: p.GetSizeBytes(), DataPercent: p.GetDataPercent(),
				MetadataPercent: p.GetMetadataPercent(), VirtualBytes: p.GetVirtualBytes(),
				OverprovisionRatio: p.GetOverprovisionRatio(),
			}
		}
		out = append(out, c)
	}
	return out
}

// fromStatus maps a gRPC error back to the service's sentinels.
func fromStatus(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf(format+": %w", append(args, err)...)
	}
	sentinel := sentinelOf(st)
	if sentinel == nil {
		return fmt.Errorf(format+": %w", append(args, err)...)
	}
	return fmt.Errorf(format+": %w: %s", append(args, sentinel, st.Message())...)
}
