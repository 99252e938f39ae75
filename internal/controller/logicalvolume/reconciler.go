package logicalvolume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

const (
	// Finalizer keeps a LogicalVolume until its node has removed the LV (TopoLVM's name).
	Finalizer = topolvmv1.LogicalVolumeFinalizer
	// FieldOwner is the field manager of the status the node agent applies.
	FieldOwner = "lvms-node"
)

// LVM is what the reconciler needs of lvmd; *lvmd.Service implements it.
type LVM interface {
	GetLV(ctx context.Context, name, class string) (lvmd.LV, error)
	CreateLV(ctx context.Context, req lvmd.CreateLVRequest) (lvmd.LV, error)
	CreateSnapshot(ctx context.Context, req lvmd.SnapshotRequest) (lvmd.LV, error)
	ResizeLV(ctx context.Context, name, class string, size uint64) (lvmd.LV, error)
	ChangeLV(ctx context.Context, req lvmd.ChangeLVRequest) (lvmd.LV, error)
	RemoveLV(ctx context.Context, name, class string) error
}

// Options configure the reconciler.
type Options struct {
	// Client reads and writes LogicalVolumes; required.
	Client client.Client
	// APIReader reads a LogicalVolume from the API server, past the cache; required. A reconcile
	// that would remove an LV as unusable first checks there that the LV is still unrecorded: the
	// cached object can lag behind the status this agent wrote a moment ago.
	APIReader client.Reader
	// NodeName is this node; only LogicalVolumes with this spec.nodeName are reconciled. Required.
	NodeName string
	// LVM creates, grows and removes the LVs; required.
	LVM LVM
	// MaxConcurrentReconciles is the number of LogicalVolumes worked on at once (default 4). lvmd
	// serializes the work on one LV, and lvm2 the work on one VG.
	MaxConcurrentReconciles int
	// StatDevice reports whether an LV's device node exists (default os.Stat); tests replace it.
	StatDevice func(path string) error
	// Fetcher copies sources from other nodes (spec.sourceNode); nil refuses such LogicalVolumes.
	Fetcher Fetcher
	// IOLimiter puts spec.ioLimits in force in the pods using a volume; nil reports such
	// LogicalVolumes IOLimited False.
	IOLimiter IOLimiter
}

// Reconciler reconciles the LogicalVolumes of one node.
type Reconciler struct {
	client   client.Client
	api      client.Reader
	nodeName string
	lvm      LVM
	workers  int
	stat     func(path string) error
	copies   *copies // nil without a Fetcher
	limiter  IOLimiter
}

// New returns the reconciler.
func New(o Options) (*Reconciler, error) {
	if o.Client == nil || o.APIReader == nil || o.NodeName == "" || o.LVM == nil {
		return nil, errors.New("logicalvolume reconciler: Client, APIReader, NodeName and LVM are required")
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 4
	}
	if o.StatDevice == nil {
		o.StatDevice = func(p string) error { _, err := os.Stat(p); return err }
	}
	var c *copies
	if o.Fetcher != nil {
		c = newCopies(o.Fetcher)
	}
	return &Reconciler{
		copies:   c,
		client:   o.Client,
		api:      o.APIReader,
		nodeName: o.NodeName,
		lvm:      o.LVM,
		workers:  o.MaxConcurrentReconciles,
		stat:     o.StatDevice,
		limiter:  o.IOLimiter,
	}, nil
}

// scope is the state of one reconcile: the object, the LV observed (nil until it exists) and the
// failures met, from which the status is derived.
type scope struct {
	lvm    LVM
	api    client.Reader
	stat   func(path string) error
	obj    *topolvmv1.LogicalVolume
	name   string // the LV name
	lv     *lvmd.LV
	status topolvmv1.LogicalVolumeStatus
	// failure is the first failure of this reconcile; it sets status.code and status.message.
	failure error
}

// phase is one step of a reconcile. It records what it observed in the scope.
type phase func(ctx context.Context, s *scope) error

// Reconcile creates, grows, changes (read-ahead, IO caps) or removes the LV of one LogicalVolume
// of this node.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &topolvmv1.LogicalVolume{}
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if obj.Spec.NodeName != r.nodeName {
		return ctrl.Result{}, nil
	}
	s := &scope{lvm: r.lvm, api: r.api, stat: r.stat, obj: obj, name: LVName(obj), status: *obj.Status.DeepCopy()}
	if s.name == "" {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("LogicalVolume %s has no UID", obj.Name))
	}
	if !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, s)
	}
	if err := r.ensureFinalizer(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	var err error
	for _, p := range []phase{r.canCopy, ensureCreated, r.ensureCopied, ensureSize, ensureReadAhead, r.ensureIOLimits} {
		if err = p(ctx, s); err != nil {
			break
		}
	}
	if errors.Is(err, errCopying) {
		err = nil // the copy's checkpoints and end wake this reconcile again
	}
	if errors.Is(err, lvmd.ErrClassesPending) {
		// The agent has just started and its volume groups are still being read: not a failure
		// to report (the CSI controller would delete the object and start over). Verbose only: a
		// node with 1,000 LVs logged 475 of these in its first 6 s.
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the device classes of this node", "lv", s.name)
		return ctrl.Result{RequeueAfter: classesPendingRetry}, nil
	}
	return ctrl.Result{}, errors.Join(retryable(err), r.applyStatus(ctx, s))
}

// classesPendingRetry is how soon a LogicalVolume met before the device classes were loaded is
// looked at again.
const classesPendingRetry = time.Second

// LVName is the LV of obj: the volume ID recorded earlier (which also covers volumes of a TopoLVM
// agent), else the object's UID, which a restarted agent derives again.
func LVName(obj *topolvmv1.LogicalVolume) string {
	if obj.Status.VolumeID != "" {
		return obj.Status.VolumeID
	}
	return string(obj.UID)
}

func (r *Reconciler) ensureFinalizer(ctx context.Context, obj *topolvmv1.LogicalVolume) error {
	base := obj.DeepCopy()
	if !controllerutil.AddFinalizer(obj, Finalizer) {
		return nil
	}
	if err := r.client.Patch(
		ctx,
		obj,
		client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}),
	); err != nil {
		return fmt.Errorf("add finalizer to LogicalVolume %s: %w", obj.Name, err)
	}
	return nil
}

// reconcileDelete removes the LV and then the finalizer. An LV that does not exist is removed. When
// no LV was ever recorded and the (loaded) device class is unknown or its VG or thin pool does not
// exist, no LV can exist either.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) error {
	obj := s.obj
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return nil
	}
	if r.copies != nil {
		r.copies.stop(obj.Name) // a copy holds the LV open
	}
	err := r.lvm.RemoveLV(ctx, s.name, obj.Spec.DeviceClass)
	if errors.Is(err, lvmd.ErrClassesPending) {
		// Until the classes are known, an LV created just before a restart may exist unrecorded:
		// releasing the object now would leak it.
		return fmt.Errorf("remove LV of LogicalVolume %s: %w", obj.Name, err)
	}
	neverCreated := obj.Status.VolumeID == "" &&
		(errors.Is(err, lvmd.ErrUnknownDeviceClass) || errors.Is(err, lvmd.ErrNotReady))
	if err != nil && !errors.Is(err, lvmd.ErrNotFound) && !neverCreated {
		return fmt.Errorf("remove LV of LogicalVolume %s: %w", obj.Name, err)
	}
	if neverCreated {
		ctrl.LoggerFrom(
			ctx,
		).Info(
			"No LV to remove: it was never recorded and its device class has no volume group here",
			"lv",
			s.name,
		)
	} else {
		ctrl.LoggerFrom(ctx).Info("Removed LV", "lv", s.name)
	}
	base := obj.DeepCopy()
	controllerutil.RemoveFinalizer(obj, Finalizer)
	if err := r.client.Patch(
		ctx,
		obj,
		client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}),
	); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("remove finalizer of LogicalVolume %s: %w", obj.Name, err))
	}
	return nil
}

// ensureCreated finds the LV or creates it. An LV that was recorded and has disappeared is not
// created again: an empty volume in place of one that held data would hide the loss. An LV found
// before it was recorded whose device node is missing is removed and created again (unusable).
func ensureCreated(ctx context.Context, s *scope) error {
	spec := &s.obj.Spec
	lv, err := s.lvm.GetLV(ctx, s.name, spec.DeviceClass)
	if err == nil && s.obj.Status.VolumeID == "" {
		err = removeUnusable(ctx, s, lv)
	}
	switch {
	case err == nil:
		s.lv = &lv
		s.setCondition(topolvmv1.ConditionCreated, nil, ReasonCreated, "the LV exists")
		return nil
	case !errors.Is(err, lvmd.ErrNotFound):
		return s.fail(topolvmv1.ConditionCreated, fmt.Errorf("look up LV %s: %w", s.name, err))
	case s.obj.Status.VolumeID != "":
		return s.fail(topolvmv1.ConditionCreated, reconcile.TerminalError(
			fmt.Errorf("%w: LV %s was created but no longer exists on node %s", errVanished, s.name, spec.NodeName)))
	}
	size, err := requestedSize(spec)
	if err == nil {
		lv, err = create(ctx, s, size)
	}
	if err != nil {
		return s.fail(topolvmv1.ConditionCreated, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created LV", "lv", lv.Name, "volumeGroup", lv.VolumeGroup, "size", lv.Size)
	s.lv = &lv
	s.setCondition(topolvmv1.ConditionCreated, nil, ReasonCreated, "the LV exists")
	return nil
}

// removeUnusable removes lv, found before this LogicalVolume recorded it, when its device node is
// missing, and then reports it as not found so that it is created again. Such an LV was left by an
// lvcreate killed midway (the node agent died during a create): lvm2 may have written it into the VG
// metadata before its thin pool made the thin device, and then no activation can ever give it a
// device ("reload ioctl ... No data available"). Never recorded means never handed to a pod, so it
// holds no data. An LV with its device node present is returned as it is (nil), and so is one the
// API server shows recorded: the cached object of this reconcile can predate the status that the
// previous reconcile wrote after it created the LV, which may already be in use.
func removeUnusable(ctx context.Context, s *scope, lv lvmd.LV) error {
	err := s.stat(lv.Path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // present, or not ours to judge: the node service reports a device it cannot open
	}
	if unrecorded, err := s.unrecordedInAPI(ctx); err != nil || !unrecorded {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Removing an LV that was never recorded and has no device node; it is created again",
		"lv", lv.Name, "device", lv.Path)
	if err := s.lvm.RemoveLV(ctx, lv.Name, lv.DeviceClass); err != nil {
		return fmt.Errorf("remove unrecorded LV %s without device node %s: %w", lv.Name, lv.Path, err)
	}
	return fmt.Errorf("unrecorded LV %s without device node removed: %w", lv.Name, lvmd.ErrNotFound)
}

// unrecordedInAPI reports whether the API server's copy of the object is the same object (UID) and
// still has no volume ID. An object gone from the API server is not judged here (false).
func (s *scope) unrecordedInAPI(ctx context.Context) (bool, error) {
	live := &topolvmv1.LogicalVolume{}
	if err := s.api.Get(ctx, client.ObjectKeyFromObject(s.obj), live); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("read LogicalVolume %s from the API server: %w", s.obj.Name, err)
	}
	return live.UID == s.obj.UID && live.Status.VolumeID == "", nil
}

// create runs the lvmd create of the spec: a snapshot (ro) or clone (rw) of spec.source, or a new LV
// (also for a source on another node, whose data is copied into it).
func create(ctx context.Context, s *scope, size uint64) (lvmd.LV, error) {
	spec := &s.obj.Spec
	if spec.Source != "" && spec.SourceNode == "" {
		lv, err := s.lvm.CreateSnapshot(ctx, lvmd.SnapshotRequest{
			Name: s.name, DeviceClass: spec.DeviceClass, Source: spec.Source, Size: size,
			ReadOnly: spec.AccessType == topolvmv1.AccessTypeReadOnly,
		})
		if errors.Is(err, lvmd.ErrNotFound) {
			err = fmt.Errorf("%w: %w", errSourceNotFound, err)
		}
		return lv, err
	}
	return s.lvm.CreateLV(ctx, lvmd.CreateLVRequest{
		Name: s.name, DeviceClass: spec.DeviceClass, Size: size, LVCreateOptionClass: spec.LvcreateOptionClass,
	})
}

// ensureSize grows the LV to spec.size; LVs are never shrunk.
func ensureSize(ctx context.Context, s *scope) error {
	size, err := requestedSize(&s.obj.Spec)
	if err != nil {
		return s.fail(topolvmv1.ConditionResized, err)
	}
	if s.lv.Size >= size {
		s.setCondition(topolvmv1.ConditionResized, nil, ReasonResized, "the LV has the requested size")
		return nil
	}
	lv, err := s.lvm.ResizeLV(ctx, s.name, s.obj.Spec.DeviceClass, size)
	if err != nil {
		return s.fail(topolvmv1.ConditionResized, fmt.Errorf("grow LV %s to %d bytes: %w", s.name, size, err))
	}
	ctrl.LoggerFrom(ctx).Info("Grew LV", "lv", s.name, "from", s.lv.Size, "to", lv.Size)
	s.lv = &lv
	s.setCondition(topolvmv1.ConditionResized, nil, ReasonResized, "the LV has the requested size")
	return nil
}

func requestedSize(spec *topolvmv1.LogicalVolumeSpec) (uint64, error) {
	n := spec.Size.Value()
	if n <= 0 {
		return 0, reconcile.TerminalError(
			fmt.Errorf("%w: spec.size %s must be positive", lvmd.ErrInvalidArgument, spec.Size.String()),
		)
	}
	return uint64(n), nil
}
