package lvmd

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	lvmdpb "github.com/lvm-operator/lvm-operator/internal/lvmd/proto"
	"github.com/lvm-operator/lvm-operator/internal/rpcserver"
)

// Server serves a Service over gRPC (LVService and VGService).
type Server struct {
	lvmdpb.UnimplementedLVServiceServer
	lvmdpb.UnimplementedVGServiceServer
	svc *Service
}

// NewServer returns a Server for svc.
func NewServer(svc *Service) *Server { return &Server{svc: svc} }

// Register registers both services on g.
func (s *Server) Register(g *grpc.Server) {
	lvmdpb.RegisterLVServiceServer(g, s)
	lvmdpb.RegisterVGServiceServer(g, s)
}

// Serve serves svc on the unix socket path until ctx ends, then stops
// gracefully (in-flight calls finish, streams are closed after
// gracePeriod). A stale socket at path is replaced; anything else there is
// an error and left alone. Calls are logged with the logger from ctx
// (rpcserver.UnaryLogger).
func Serve(ctx context.Context, svc *Service, path string, gracePeriod time.Duration) error {
	srv, err := rpcserver.New(path, logr.FromContextOrDiscard(ctx))
	if err != nil {
		return err
	}
	srv.GracePeriod = gracePeriod
	NewServer(svc).Register(srv.GRPC)
	return srv.Start(ctx)
}

func lvToProto(lv LV) *lvmdpb.LogicalVolume {
	return &lvmdpb.LogicalVolume{
		Name: lv.Name, DeviceClass: lv.DeviceClass, VolumeGroup: lv.VolumeGroup, SizeBytes: lv.Size,
		Path: lv.Path, Tags: lv.Tags, Origin: lv.Origin, ThinPool: lv.ThinPool, ReadOnly: lv.ReadOnly, Uuid: lv.UUID,
		ReadAhead: lv.ReadAhead,
	}
}

// CreateLV implements LVService.
func (s *Server) CreateLV(ctx context.Context, req *lvmdpb.CreateLVRequest) (*lvmdpb.CreateLVResponse, error) {
	lv, err := s.svc.CreateLV(ctx, CreateLVRequest{
		Name: req.GetName(), DeviceClass: req.GetDeviceClass(), Size: req.GetSizeBytes(),
		LVCreateOptionClass: req.GetLvcreateOptionClass(), Tags: req.GetTags(),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return &lvmdpb.CreateLVResponse{Volume: lvToProto(lv)}, nil
}

// ChangeLV implements LVService.
func (s *Server) ChangeLV(ctx context.Context, req *lvmdpb.ChangeLVRequest) (*lvmdpb.ChangeLVResponse, error) {
	lv, err := s.svc.ChangeLV(ctx, ChangeLVRequest{
		Name: req.GetName(), DeviceClass: req.GetDeviceClass(), ReadAhead: req.GetReadAhead(),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return &lvmdpb.ChangeLVResponse{Volume: lvToProto(lv)}, nil
}

// RemoveLV implements LVService.
func (s *Server) RemoveLV(ctx context.Context, req *lvmdpb.RemoveLVRequest) (*lvmdpb.RemoveLVResponse, error) {
	if err := s.svc.RemoveLV(ctx, req.GetName(), req.GetDeviceClass()); err != nil {
		return nil, toStatus(err)
	}
	return &lvmdpb.RemoveLVResponse{}, nil
}

// ResizeLV implements LVService.
func (s *Server) ResizeLV(ctx context.Context, req *lvmdpb.ResizeLVRequest) (*lvmdpb.ResizeLVResponse, error) {
	lv, err := s.svc.ResizeLV(ctx, req.GetName(), req.GetDeviceClass(), req.GetSizeBytes())
	if err != nil {
		return nil, toStatus(err)
	}
	return &lvmdpb.ResizeLVResponse{Volume: lvToProto(lv)}, nil
}

// CreateLVSnapshot implements LVService.
func (s *Server) CreateLVSnapshot(
	ctx context.Context,
	req *lvmdpb.CreateLVSnapshotRequest,
) (*lvmdpb.CreateLVSnapshotResponse, error) {
	var readOnly bool
	switch req.GetAccess() {
	case lvmdpb.SnapshotAccess_SNAPSHOT_ACCESS_READ_ONLY:
		readOnly = true
	case lvmdpb.SnapshotAccess_SNAPSHOT_ACCESS_READ_WRITE:
	default:
		return nil, status.Error(codes.InvalidArgument, "snapshot access must be READ_ONLY or READ_WRITE")
	}
	lv, err := s.svc.CreateSnapshot(ctx, SnapshotRequest{
		Name: req.GetName(), DeviceClass: req.GetDeviceClass(), Source: req.GetSourceVolume(),
		Size: req.GetSizeBytes(), ReadOnly: readOnly, Tags: req.GetTags(),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return &lvmdpb.CreateLVSnapshotResponse{Snapshot: lvToProto(lv)}, nil
}

// GetLVList implements VGService.
func (s *Server) GetLVList(ctx context.Context, req *lvmdpb.GetLVListRequest) (*lvmdpb.GetLVListResponse, error) {
	lvs, err := s.svc.ListLVs(ctx, req.GetDeviceClass())
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &lvmdpb.GetLVListResponse{}
	for _, lv := range lvs {
		resp.Volumes = append(resp.Volumes, lvToProto(lv))
	}
	return resp, nil
}

// GetLV implements VGService.
func (s *Server) GetLV(ctx context.Context, req *lvmdpb.GetLVRequest) (*lvmdpb.GetLVResponse, error) {
	lv, err := s.svc.GetLV(ctx, req.GetName(), req.GetDeviceClass())
	if err != nil {
		return nil, toStatus(err)
	}
	return &lvmdpb.GetLVResponse{Volume: lvToProto(lv)}, nil
}

// GetFreeBytes implements VGService.
func (s *Server) GetFreeBytes(
	ctx context.Context,
	req *lvmdpb.GetFreeBytesRequest,
) (*lvmdpb.GetFreeBytesResponse, error) {
	c, err := s.svc.Capacity(ctx, req.GetDeviceClass())
	if err != nil {
		return nil, toStatus(err)
	}
	return &lvmdpb.GetFreeBytesResponse{FreeBytes: c.FreeBytes}, nil
}

// Watch implements VGService: the current capacities, then each change.
func (s *Server) Watch(_ *lvmdpb.WatchRequest, stream grpc.ServerStreamingServer[lvmdpb.WatchResponse]) error {
	ctx := stream.Context()
	if _, err := s.svc.Capacities(ctx); err != nil {
		return toStatus(err)
	}
	for caps := range s.svc.Watch(ctx) {
		if err := stream.Send(capacitiesToProto(caps)); err != nil {
			return err
		}
	}
	return toStatus(ctx.Err())
}

func capacitiesToProto(caps []Capacity) *lvmdpb.WatchResponse {
	resp := &lvmdpb.WatchResponse{}
	for _, c := range caps {
		item := &lvmdpb.DeviceClassCapacity{
			DeviceClass: c.DeviceClass, VolumeGroup: c.VolumeGroup, Ready: c.Ready, Default: c.Default,
			FreeBytes: c.FreeBytes, SizeBytes: c.SizeBytes, VgSizeBytes: c.VGSizeBytes, VgFreeBytes: c.VGFreeBytes,
		}
		if p := c.ThinPool; p != nil {
			item.ThinPool = &lvmdpb.ThinPoolCapacity{
				Name: p.Name, SizeBytes: p.SizeBytes, DataPercent: p.DataPercent, MetadataPercent: p.MetadataPercent,
				VirtualBytes: p.VirtualBytes, OverprovisionRatio: p.OverprovisionRatio,
			}
		}
		resp.Items = append(resp.Items, item)
	}
	return resp
}
