package vgmanager

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// Options are the dependencies of the Reconciler, set once at construction.
type Options struct {
	// Client reads LVMVolumeGroups, LVMClusters and this Node, and writes the wiped annotation, the
	// LVMVolumeGroupNodeStatus and the removal of an older agent's finalizer.
	Client client.Client
	// APIReader reads an LVMVolumeGroup past the cache once this node's claim is written
	// (ensureClaim); nil means Client.
	APIReader client.Reader
	// Recorder emits events on LVMVolumeGroups.
	Recorder events.EventRecorder
	// Disks inventories and wipes block devices (*devices.Host).
	Disks Disks
	// LVM runs lvm2 (*lvm.Client).
	LVM LVM
	// Sink receives the device classes of this node (*lvmd.DeviceClassManager); a configuration
	// equal to the last one changes nothing there.
	Sink DeviceClassSink
	// StateChanged, if set, is called after a reconcile changed a volume group or its thin pool
	// (lvmd.Service.MarkStale: lvmd's cache reads the new sizes at once).
	StateChanged func()
	// NodeName is the node this agent runs on.
	NodeName string
	// ClusterID identifies the cluster (the UID of its kube-system namespace); with NodeName it
	// tags the VGs this node creates, and a VG tagged for another node or cluster is refused.
	ClusterID string
	// Namespace is the operator namespace: LVMVolumeGroups and LVMVolumeGroupNodeStatuses live there.
	Namespace string
	// ResolvePath resolves deviceSelector paths; nil means devices.ResolvePath.
	ResolvePath func(string) (string, error)
	// DiscoveryInterval is how often to look for new disks while a VG can grow; 0 means
	// DefaultDiscoveryInterval.
	DiscoveryInterval time.Duration
	// RAIDRepairDelay is how long a missing disk of a RAID class has to come back before the repair
	// begins; 0 means DefaultRAIDRepairDelay, negative at once.
	RAIDRepairDelay time.Duration
}

// Reconciler reconciles the LVMVolumeGroups that select this node.
type Reconciler struct {
	client   client.Client
	reader   client.Reader
	recorder events.EventRecorder
	lvm      LVM
	nodes    *NodeManager
	sink     DeviceClassSink
	changed  func()
	feedMu   sync.Mutex // see feedLVMD
	claimMu  sync.Mutex
	// pendingClaims are the UIDs of LVMVolumeGroups this node claimed and has not yet read past the
	// cache (ensureClaim).
	pendingClaims map[types.UID]bool
	nodeName      string
	clusterID     string
	namespace     string
	interval      time.Duration
	repairDelay   time.Duration
	// missingSince is when this agent first saw each volume group miss a disk (repair.go).
	missingMu    sync.Mutex
	missingSince map[string]time.Time
}

// New returns the volume-group manager of node o.NodeName.
func New(o Options) *Reconciler {
	interval := o.DiscoveryInterval
	if interval <= 0 {
		interval = DefaultDiscoveryInterval
	}
	reader := o.APIReader
	if reader == nil {
		reader = o.Client
	}
	return &Reconciler{
		client:        o.Client,
		reader:        reader,
		pendingClaims: map[types.UID]bool{},
		recorder:      o.Recorder,
		lvm:           o.LVM,
		nodes:         NewNodeManager(o.Disks, o.LVM, o.ResolvePath),
		sink:          o.Sink,
		changed:       o.StateChanged,
		nodeName:      o.NodeName,
		clusterID:     o.ClusterID,
		namespace:     o.Namespace,
		interval:      interval,
		repairDelay:   repairDelay(o.RAIDRepairDelay),
		missingSince:  map[string]time.Time{},
	}
}

// scope is the state of one reconcile.
type scope struct {
	vg   *lvmv1alpha1.LVMVolumeGroup
	node *corev1.Node
	// dryRun is read from the annotation.
	dryRun bool
	// claimed: this node has an entry for the volume group, or an older agent's finalizer on it.
	claimed bool
	// status is this node's entry, written once at the end; tornDown (the VG is gone from this node)
	// drops the entry instead, which lets the operator release the LVMVolumeGroup.
	status   *lvmv1alpha1.VGStatus
	tornDown bool
	// observed is the LVM state reconcileVG read and did not change (nil otherwise): the lvmd feed
	// that follows uses it instead of reading the state again.
	observed *lvm.State
}

// phase is one named step of a reconcile.
type phase func(ctx context.Context, s *scope) (ctrl.Result, error)

// Reconcile builds, grows or tears down this node's volume group of one LVMVolumeGroup.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	node, err := r.node(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	vg := &lvmv1alpha1.LVMVolumeGroup{}
	if err := r.client.Get(ctx, req.NamespacedName, vg); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, errors.Join(r.forgetVolumeGroup(ctx, req.Name), r.feedLVMD(ctx, node))
		}
		return ctrl.Result{}, fmt.Errorf("get LVMVolumeGroup %s: %w", req.NamespacedName, err)
	}
	selected, err := r.selects(vg, node)
	if err != nil {
		return ctrl.Result{}, err
	}
	entries, err := r.ownEntries(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	ours := r.claimed(entries, vg)
	if !selected && !ours {
		return ctrl.Result{}, nil
	}
	s := &scope{vg: vg, node: node, claimed: ours}
	defer func() { retErr = errors.Join(retErr, r.writeStatus(ctx, s)) }()

	phases := []phase{r.ensureClaim, r.readDryRun, r.reconcileVG, r.feedLVMDPhase}
	if !vg.DeletionTimestamp.IsZero() || !selected {
		// Deleted, or this node no longer matches the nodeSelector: tear the VG down.
		phases = []phase{r.readDryRun, r.teardown, r.feedLVMDPhase, r.removeFinalizer}
	}
	for _, p := range phases {
		pres, err := p(ctx, s)
		if errors.Is(err, errLostRace) {
			return ctrl.Result{RequeueAfter: raceRetry()}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		if pres.RequeueAfter > 0 && (res.RequeueAfter == 0 || pres.RequeueAfter < res.RequeueAfter) {
			res.RequeueAfter = pres.RequeueAfter
		}
	}
	return res, nil
}

// node returns this node; a missing node has no labels.
func (r *Reconciler) node(ctx context.Context) (*corev1.Node, error) {
	node := &corev1.Node{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: r.nodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: r.nodeName}}, nil
		}
		return nil, fmt.Errorf("get node %s: %w", r.nodeName, err)
	}
	return node, nil
}

// selects reports whether vg's nodeSelector matches node (no selector matches every node).
func (r *Reconciler) selects(vg *lvmv1alpha1.LVMVolumeGroup, node *corev1.Node) (bool, error) {
	if vg.Spec.NodeSelector == nil {
		return true, nil
	}
	sel, err := nodeaffinity.NewNodeSelector(vg.Spec.NodeSelector)
	if err != nil {
		return false, fmt.Errorf("nodeSelector of LVMVolumeGroup %s: %w", vg.Name, err)
	}
	return sel.Match(node), nil
}

// errLostRace marks a reconcile that lost a race it retries soon: another node changed the
// finalizer list first, or the LVMVolumeGroup began its deletion as this node claimed it.
var errLostRace = errors.New("the LVMVolumeGroup changed under this node's write")

// raceRetry is how soon a reconcile that lost such a race runs again: a short random delay rather
// than the failure backoff, which doubles up to 16 minutes. With a thousand nodes joining at once
// most lose several races, and the backoff left some nodes' volume groups unreported for many
// minutes (the scale benchmark, docs/scale.md).
func raceRetry() time.Duration { return 200*time.Millisecond + rand.N(800*time.Millisecond) }

// removeFinalizer drops, once teardown found the VG gone from this node, the finalizer an older
// agent of this node put on the LVMVolumeGroup (the claim, this node's entry, goes with the
// deferred status write).
func (r *Reconciler) removeFinalizer(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !s.tornDown {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.dropLegacyFinalizer(ctx, s.vg)
}

// ErrOwnerUnknown is returned when the LVMCluster owning a volume group cannot be read: whether it
// asks for dry-run is unknown, so nothing is changed and the reconcile is retried.
var ErrOwnerUnknown = errors.New("owner unknown, nothing changed until its dry-run annotation can be read")

// readDryRun reads DryRunAnnotation from the LVMVolumeGroup or from the LVMCluster owning it (the
// operator does not copy annotations, so the owner is where users set it).
func (r *Reconciler) readDryRun(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.vg.Annotations[DryRunAnnotation] == "true" {
		s.dryRun = true
		return ctrl.Result{}, nil
	}
	ref := metav1.GetControllerOf(s.vg)
	if ref == nil || ref.Kind != "LVMCluster" {
		return ctrl.Result{}, nil
	}
	cluster := &lvmv1alpha1.LVMCluster{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: s.vg.Namespace, Name: ref.Name}, cluster)
	switch {
	case apierrors.IsNotFound(err) && !s.vg.DeletionTimestamp.IsZero():
		// The owner is gone and its volume groups are being deleted with it: no annotation is left to
		// honour, and waiting would hold the finalizer forever.
		return ctrl.Result{}, nil
	case apierrors.IsNotFound(err):
		// Fail closed: the owner may only be missing from the cache yet, and it may ask for dry-run.
		return ctrl.Result{}, fmt.Errorf("%w: LVMCluster %s owning LVMVolumeGroup %s is not found",
			ErrOwnerUnknown, ref.Name, s.vg.Name)
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get LVMCluster %s for the dry-run annotation: %w", ref.Name, err)
	}
	s.dryRun = cluster.Annotations[DryRunAnnotation] == "true"
	return ctrl.Result{}, nil
}

// reconcileVG runs the node manager and keeps its status for the deferred write.
func (r *Reconciler) reconcileVG(ctx context.Context, s *scope) (ctrl.Result, error) {
	in := Input{
		Name: s.vg.Name, Spec: s.vg.Spec, NodeName: r.nodeName, DryRun: s.dryRun,
		Identity:     lvm.Identity{Node: r.nodeName, Cluster: r.clusterID},
		AlreadyWiped: s.vg.Annotations[WipedAnnotation(r.nodeName)] != "",
		MissingSince: r.missingFrom(s.vg.Name), RepairDelay: r.repairDelay,
	}
	start := time.Now()
	changing := false
	hooks := Hooks{
		BeforeChange: func(ctx context.Context, st lvmv1alpha1.VGStatus) error {
			changing = true
			r.recorder.Eventf(
				s.vg,
				nil,
				corev1.EventTypeNormal,
				EventVolumeGroup,
				"Reconcile",
				"node %s: %s",
				r.nodeName,
				st.Reason,
			)
			return r.applyStatus(ctx, s.vg.Name, st)
		},
		AfterWipe: func(ctx context.Context) error { return r.markWiped(ctx, s) },
	}
	out, err := r.nodes.Reconcile(ctx, in, hooks)
	s.status, s.observed = &out.Status, out.Observed
	r.recordMissing(s.vg.Name, out.Status, start)
	if changing && r.changed != nil {
		r.changed() // whether or not every change succeeded: some may have
	}
	if err != nil {
		r.recorder.Eventf(s.vg, nil, corev1.EventTypeWarning, EventFailed, "Reconcile", "node %s: %v", r.nodeName, err)
		return ctrl.Result{}, err
	}
	// Disks appear on a node, and volumes fill a volume group and its thin pool, without any
	// Kubernetes event: look again, for disks to add and for the capacity and fill level the status
	// reports (a thin pool past PoolFullPercent makes it Degraded).
	return ctrl.Result{RequeueAfter: r.interval}, nil
}

// markWiped records this node's one-time wipe on the LVMVolumeGroup, right after wiping.
func (r *Reconciler) markWiped(ctx context.Context, s *scope) error {
	orig := s.vg.DeepCopy()
	if s.vg.Annotations == nil {
		s.vg.Annotations = map[string]string{}
	}
	s.vg.Annotations[WipedAnnotation(r.nodeName)] = time.Now().UTC().Format(time.RFC3339)
	if err := r.client.Patch(ctx, s.vg, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("record wipe on LVMVolumeGroup %s: %w", s.vg.Name, err)
	}
	r.recorder.Eventf(s.vg, nil, corev1.EventTypeWarning, EventDevicesWiped, "Wipe",
		"node %s wiped the selected devices (forceWipeDevicesAndDestroyAllData)", r.nodeName)
	return nil
}

// teardown removes the VG from this node, or refuses while volumes exist.
func (r *Reconciler) teardown(ctx context.Context, s *scope) (ctrl.Result, error) {
	done, err := r.nodes.Teardown(ctx, s.vg.Name, s.vg.Spec, s.dryRun)
	if errors.Is(err, ErrDryRun) {
		st := lvmv1alpha1.VGStatus{
			Name:   s.vg.Name,
			Status: lvmv1alpha1.VGStatusProgressing,
			Reason: "deletion: " + err.Error(),
		}
		s.status = &st
		return ctrl.Result{}, r.feedLVMD(ctx, s.node) // the LVMCluster watch brings us back when dry-run ends
	}
	if errors.Is(err, ErrVolumesExist) {
		st := lvmv1alpha1.VGStatus{
			Name:   s.vg.Name,
			Status: lvmv1alpha1.VGStatusDegraded,
			Reason: "deletion blocked: " + err.Error(),
		}
		s.status = &st
		r.recorder.Eventf(
			s.vg,
			nil,
			corev1.EventTypeWarning,
			EventDeletionBlocked,
			"Delete",
			"node %s: %v",
			r.nodeName,
			err,
		)
		// The volumes go away through lvmd, not through an event on this object: look again later.
		return ctrl.Result{RequeueAfter: r.interval}, r.feedLVMD(ctx, s.node)
	}
	if err != nil {
		st := lvmv1alpha1.VGStatus{Name: s.vg.Name, Status: lvmv1alpha1.VGStatusFailed, Reason: err.Error()}
		s.status = &st
		return ctrl.Result{}, err
	}
	if !done {
		return ctrl.Result{}, errors.New("volume group still present after teardown")
	}
	s.tornDown = true
	return ctrl.Result{}, nil
}

// feedLVMDPhase feeds lvmd after reconcileVG or teardown. A pass that changed nothing (the periodic
// one, every DiscoveryInterval per volume group) feeds from the state it has just read: nothing
// else changes volume groups or thin pools in between (one reconcile at a time; lvmd changes only
// LVs, which the device classes do not depend on), and each read is an `lvm fullreport` that
// holds the VG lock lvcreate and lvremove wait for.
func (r *Reconciler) feedLVMDPhase(ctx context.Context, s *scope) (ctrl.Result, error) {
	return ctrl.Result{}, r.feedLVMDFrom(ctx, s.node, s.observed)
}

// FeedLVMDAtStart gives lvmd the device classes of this node once, at start, even when no volume
// group selects this node and no reconcile would: until it is fed, lvmd answers every LV request
// with ErrClassesPending. It retries every 2 s until it succeeds or ctx ends; run it after the
// manager's caches have synced (a manager.Runnable does).
func (r *Reconciler) FeedLVMDAtStart(ctx context.Context) error {
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		node, err := r.node(ctx)
		if err == nil {
			err = r.feedLVMD(ctx, node)
		}
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Feeding lvmd its device classes at start; retrying")
			return false, nil
		}
		return true, nil
	})
	if ctx.Err() != nil {
		return nil // shutting down
	}
	return err
}

// feedLVMD gives lvmd the device classes of every volume group of this node. Feeds are serialized:
// each one lists, reads the LVM state and replaces as one step, so an older view never replaces a
// newer one.
func (r *Reconciler) feedLVMD(ctx context.Context, node *corev1.Node) error {
	return r.feedLVMDFrom(ctx, node, nil)
}

// feedLVMDFrom is feedLVMD from state, read here when nil.
func (r *Reconciler) feedLVMDFrom(ctx context.Context, node *corev1.Node, state *lvm.State) error {
	r.feedMu.Lock()
	defer r.feedMu.Unlock()
	var list lvmv1alpha1.LVMVolumeGroupList
	if err := r.client.List(ctx, &list, client.InNamespace(r.namespace)); err != nil {
		return fmt.Errorf("list LVMVolumeGroups: %w", err)
	}
	entries, err := r.ownEntries(ctx)
	if err != nil {
		return err
	}
	var mine []lvmv1alpha1.LVMVolumeGroup
	for _, vg := range list.Items {
		selected, err := r.selects(&vg, node)
		if err != nil {
			continue // reported by that volume group's own reconcile
		}
		if selected || r.claimed(entries, &vg) {
			mine = append(mine, vg)
		}
	}
	if state == nil {
		var err error
		if state, err = r.lvm.State(ctx); err != nil {
			return fmt.Errorf("device classes for lvmd: %w", err)
		}
	}
	cfg, err := LVMDConfig(mine, state)
	if err != nil {
		return fmt.Errorf("device classes for lvmd: %w", err)
	}
	if err := r.sink.Replace(cfg); err != nil {
		return fmt.Errorf("device classes for lvmd: %w", err)
	}
	return nil
}
