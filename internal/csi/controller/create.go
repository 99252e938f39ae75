package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// CreateVolume creates (or finds) the LogicalVolume named by the CSI name and returns once its node
// has created the LV.
func (s *Server) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	name := req.GetName()
	if name == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	if err := lvmcsi.ValidateCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	release, err := s.locks.Lock(name)
	if err != nil {
		return nil, err
	}
	defer release()

	start := s.clock.Now()
	want, err := s.desiredVolume(ctx, req)
	lvmcsi.PhaseDuration.WithLabelValues("plan").Observe(s.clock.Since(start).Seconds())
	if err != nil {
		return nil, rpcError(err)
	}
	lv, err := s.ensure(ctx, want)
	if err != nil {
		return nil, rpcError(err)
	}
	return &csi.CreateVolumeResponse{Volume: volumeOf(lv, req.GetVolumeContentSource())}, nil
}

// desiredVolume is the LogicalVolume a CreateVolume request asks for.
func (s *Server) desiredVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*topolvmv1.LogicalVolume, error) {
	caps, params := req.GetVolumeCapabilities(), req.GetParameters()
	block := lvmcsi.IsBlock(caps...)
	fsType := ""
	if !block {
		var err error
		if fsType, err = lvmcsi.FSType(caps[0], params); err != nil {
			return nil, err
		}
	}
	encryption, err := lvmcsi.Encryption(params)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalid, err)
	}
	minimum := lvmcsi.MinimumSize(fsType, block)
	var annotations map[string]string
	if encryption != "" {
		// The LUKS2 header comes off the LV; the filesystem still gets its minimum. The annotation
		// carries the choice to volumeOf (the volume context) and to ControllerExpandVolume.
		minimum += lvmcsi.LUKS2HeaderSize
		annotations = map[string]string{driver.ParamEncryption: encryption}
	}
	size, err := lvmcsi.RequestedSize(req.GetCapacityRange(), minimum)
	if err != nil {
		return nil, err
	}
	limits, err := IOLimits(req.GetMutableParameters(), nil)
	if err != nil {
		return nil, err
	}
	readAhead, err := ReadAhead(req.GetMutableParameters(), "")
	if err != nil {
		return nil, err
	}
	lv := &topolvmv1.LogicalVolume{
		ObjectMeta: metav1.ObjectMeta{Name: objectName(req.GetName()), Annotations: annotations},
		Spec: topolvmv1.LogicalVolumeSpec{
			Name:                req.GetName(),
			DeviceClass:         params[driver.ParamDeviceClass],
			LvcreateOptionClass: params[driver.ParamLvcreateOptionClass],
			IOLimits:            limits,
			ReadAhead:           readAhead,
		},
	}
	if src := req.GetVolumeContentSource(); src != nil {
		size, err = s.fromSource(ctx, src, req, &lv.Spec, size)
		if err != nil {
			return nil, err
		}
		annotateCopy(lv, params, src)
	} else if lv.Spec.NodeName, err = s.pickNode(ctx, req.GetAccessibilityRequirements(), lv.Spec.DeviceClass); err != nil {
		return nil, err
	}
	lv.Spec.Size = *resource.NewQuantity(size, resource.BinarySI)
	return lv, nil
}

// fromSource fills spec for a clone of a volume or a restore of a snapshot, in the source's device
// class. On the source's node, the node makes a thin snapshot in a thin class; in a thick class it
// copies a snapshot (a restore) or a snapshot it takes of the source volume (a clone). A restore or clone
// placed on another node (sourcePlacement) is a new LV there that its agent fills with a copy of the
// source's data from the source node (spec.sourceNode). It returns the size, raised to the source's.
func (s *Server) fromSource(ctx context.Context, src *csi.VolumeContentSource, req *csi.CreateVolumeRequest,
	spec *topolvmv1.LogicalVolumeSpec, size int64) (int64, error) {
	id := src.GetSnapshot().GetSnapshotId()
	if id == "" {
		id = src.GetVolume().GetVolumeId()
	}
	if id == "" {
		return 0, fmt.Errorf("%w: volume content source names neither a snapshot nor a volume", errInvalid)
	}
	source, err := s.getByVolumeID(ctx, id)
	if err != nil {
		return 0, err
	}
	if source == nil {
		return 0, fmt.Errorf("source %s: %w", id, errNotFound)
	}
	if spec.DeviceClass != "" && spec.DeviceClass != source.Spec.DeviceClass {
		return 0, fmt.Errorf("%w: device class %q differs from the source's %q", errInvalid,
			spec.DeviceClass, source.Spec.DeviceClass)
	}
	spec.DeviceClass = source.Spec.DeviceClass
	if spec.NodeName, err = s.sourcePlacement(ctx, req, source); err != nil {
		return 0, err
	}
	if spec.NodeName != source.Spec.NodeName {
		spec.SourceNode = source.Spec.NodeName
	}
	spec.Source = id
	spec.AccessType = topolvmv1.AccessTypeReadWrite
	if srcSize := source.Spec.Size.Value(); size < srcSize {
		if limit := req.GetCapacityRange().GetLimitBytes(); limit > 0 && limit < srcSize {
			return 0, fmt.Errorf(
				"%w: limit %d bytes is below the source's %d bytes",
				lvmcsi.ErrOutOfRange,
				limit,
				srcSize,
			)
		}
		size = srcSize
	}
	return size, nil
}

// ensure creates want unless a LogicalVolume of that name exists, checks that an existing one is
// compatible, and waits until the node reports the LV created. A node failure deletes the object so a
// retry starts afresh.
func (s *Server) ensure(ctx context.Context, want *topolvmv1.LogicalVolume) (*topolvmv1.LogicalVolume, error) {
	name := want.Name
	lv, err := s.getByName(ctx, name)
	if err != nil {
		return nil, err
	}
	if lv == nil {
		err := s.client.Create(ctx, want.DeepCopy(), client.FieldOwner(FieldOwner))
		switch {
		case err == nil:
			ctrl.LoggerFrom(ctx).Info("Created LogicalVolume", "logicalVolume", name, "node", want.Spec.NodeName)
		case apierrors.IsAlreadyExists(err):
			// Our cache is behind; compare once it has caught up.
			if lv, err = s.waitFor(ctx, name, "visible", exists); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("create LogicalVolume %s: %w", name, err)
		}
	}
	if lv != nil {
		if err := compatible(lv, want); err != nil {
			return nil, err
		}
	}
	lv, err = s.waitFor(ctx, name, "created", created)
	var ne *nodeError
	if errors.As(err, &ne) && lv != nil {
		if derr := s.client.Delete(ctx, lv, client.Preconditions{UID: &lv.UID}); client.IgnoreNotFound(derr) != nil {
			return nil, errors.Join(err, fmt.Errorf("delete failed LogicalVolume %s: %w", name, derr))
		}
	}
	return lv, err
}

// compatible fails with errAlreadyExists unless the existing lv satisfies want, and with errBusy while
// it is being deleted.
func compatible(lv, want *topolvmv1.LogicalVolume) error {
	if lv.DeletionTimestamp != nil {
		return fmt.Errorf("LogicalVolume %s is being deleted: %w", lv.Name, errBusy)
	}
	switch {
	case lv.Spec.Name != want.Spec.Name:
		return fmt.Errorf("object %s: %w: it belongs to CSI name %q", lv.Name, errAlreadyExists, lv.Spec.Name)
	case lv.Spec.Size.Cmp(want.Spec.Size) < 0 && want.Spec.AccessType != topolvmv1.AccessTypeReadOnly:
		// A snapshot's size is not requested but the source's, which may have grown since, or been
		// recorded by an older version as the source's requested size.
		return fmt.Errorf("volume %s: %w: size %s, requested %s", lv.Name, errAlreadyExists,
			lv.Spec.Size.String(), want.Spec.Size.String())
	case lv.Spec.Source != want.Spec.Source:
		return fmt.Errorf("volume %s: %w: source %q, requested %q", lv.Name, errAlreadyExists,
			lv.Spec.Source, want.Spec.Source)
	case lv.Spec.DeviceClass != want.Spec.DeviceClass:
		return fmt.Errorf("volume %s: %w: device class %q, requested %q", lv.Name, errAlreadyExists,
			lv.Spec.DeviceClass, want.Spec.DeviceClass)
	case lv.Spec.AccessType != want.Spec.AccessType:
		return fmt.Errorf("volume %s: %w: access type %q, requested %q", lv.Name, errAlreadyExists,
			lv.Spec.AccessType, want.Spec.AccessType)
	case encryptionOf(lv) != encryptionOf(want):
		return fmt.Errorf("volume %s: %w: encryption %q, requested %q", lv.Name, errAlreadyExists,
			encryptionOf(lv), encryptionOf(want))
	}
	return nil
}

// objectName is the LogicalVolume name of a CSI volume or snapshot name: the CSI name itself when it is
// a valid object name (as the external-provisioner's pvc-<uid> and snapshot-<uid> are, and as TopoLVM
// names them), else a digest of it (CSI names may hold upper case and other characters Kubernetes
// refuses). spec.name always keeps the CSI name.
func objectName(csiName string) string {
	if len(validation.IsDNS1123Subdomain(csiName)) == 0 {
		return csiName
	}
	sum := sha256.Sum256([]byte(csiName))
	return "csi-" + hex.EncodeToString(sum[:20])
}

func exists(lv *topolvmv1.LogicalVolume) (bool, error) { return lv != nil, nil }

// created holds once the node has set the volume ID, and fails when the node reported a failure. A
// missing object keeps waiting: right after Create the cache may not have seen it yet.
func created(lv *topolvmv1.LogicalVolume) (bool, error) {
	switch {
	case lv == nil:
		return false, nil
	case lv.Status.VolumeID != "":
		return true, nil
	default:
		err := nodeFailure(lv)
		return err != nil, err
	}
}

// encryptionOf is the encryption the LogicalVolume was created with ("" for none).
func encryptionOf(lv *topolvmv1.LogicalVolume) string {
	return lv.Annotations[driver.ParamEncryption]
}

// volumeOf is the CSI volume of a created LogicalVolume; its volume context names the encryption, which
// the node needs in NodeStageVolume and NodePublishVolume.
func volumeOf(lv *topolvmv1.LogicalVolume, src *csi.VolumeContentSource) *csi.Volume {
	var volumeContext map[string]string
	if e := encryptionOf(lv); e != "" {
		volumeContext = map[string]string{driver.ParamEncryption: e}
	}
	return &csi.Volume{
		VolumeId:           lv.Status.VolumeID,
		VolumeContext:      volumeContext,
		CapacityBytes:      currentSize(lv),
		ContentSource:      src,
		AccessibleTopology: []*csi.Topology{{Segments: map[string]string{driver.TopologyNodeKey: lv.Spec.NodeName}}},
	}
}

// currentSize is the real size the node reported, else the requested one.
func currentSize(lv *topolvmv1.LogicalVolume) int64 {
	if lv.Status.CurrentSize != nil {
		return lv.Status.CurrentSize.Value()
	}
	return lv.Spec.Size.Value()
}

// annotateCopy annotates a volume copied from another node: with its claim (driver.AnnotationClaim),
// when the provisioner passed it, on which the operator reports the copy's progress as events; and,
// for a clone of a live volume, with driver.AnnotationCopyImage, so the copy reads a snapshot of it.
func annotateCopy(lv *topolvmv1.LogicalVolume, params map[string]string, src *csi.VolumeContentSource) {
	if lv.Spec.SourceNode == "" {
		return
	}
	if lv.Annotations == nil {
		lv.Annotations = map[string]string{}
	}
	if src.GetVolume() != nil {
		lv.Annotations[driver.AnnotationCopyImage] = "true"
	}
	if name, ns := params[paramPVCName], params[paramPVCNamespace]; name != "" && ns != "" {
		lv.Annotations[driver.AnnotationClaim] = ns + "/" + name
	}
}
