package lvmcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// Options configure the LVMCluster controller.
type Options struct {
	// Namespace is the operator's namespace: operands live there, and the LVMCluster must too.
	Namespace string
	// NodeImage is the image of the node agent (`lvms node`).
	NodeImage string
	// ImagePullPolicy of the node agent.
	ImagePullPolicy corev1.PullPolicy
	// RegistrarImage and LivenessProbeImage add the node-driver-registrar and livenessprobe
	// sidecars; empty (the default) means the node agent serves both in process.
	RegistrarImage     string
	LivenessProbeImage string
	// ClusterID is the cluster's identity (the UID of kube-system), passed to the node agents
	// (--cluster-id) to tag VGs and LVs with.
	ClusterID string
	// SnapshotMetadata makes the node agents serve their SnapshotMetadata endpoint with the
	// certificates of the SnapshotMetadataNodeCert and SnapshotMetadataClientCert Secrets, and
	// runs the driver's endpoint for backup clients (snapmeta.go).
	SnapshotMetadata bool
	// SnapshotMetadataSidecarImage is the external-snapshot-metadata sidecar's image.
	SnapshotMetadataSidecarImage string
	// Profiling makes the node agents serve Go's runtime profiles on their metrics endpoint
	// (`lvms node --profiling`), as the operator does when it is set.
	Profiling bool
	// TLSArgs are the node agents' --tls-min-version and --tls-cipher-suites (the operator's own,
	// tlsprofile.Profile.Args); none keeps Go's defaults.
	TLSArgs []string
	// LogLevel is the node agents' --zap-log-level ("": their default, info), the operator's own
	// when it is set.
	LogLevel string
	// NodeAgentPolicy: the API server serves ValidatingAdmissionPolicy v1 (NodeAgentPolicyServed)
	// and the manager's cache holds the policy and its binding (NodeAgentPolicyCache). The
	// controller then writes and watches them; without it the condition NodeAgentPolicy is False
	// (PolicyUnsupported). Found out once, at start: the cache is set up before the manager exists.
	NodeAgentPolicy bool
}

// Reconciler reconciles LVMClusters.
type Reconciler struct {
	client   client.Client
	recorder events.EventRecorder
	opts     Options
	absent   *absentKinds
}

// New returns the LVMCluster reconciler.
func New(cl client.Client, recorder events.EventRecorder, opts Options) *Reconciler {
	return &Reconciler{client: cl, recorder: recorder, opts: opts, absent: newAbsentKinds(time.Now)}
}

// scope is the state of one reconcile.
type scope struct {
	client   client.Client
	recorder events.EventRecorder
	opts     Options
	cluster  *lvmv1alpha1.LVMCluster
	original *lvmv1alpha1.LVMCluster
	// absent remembers the optional kinds the API server did not serve (nil: ask every time).
	absent *absentKinds
}

// phase is one named step of a reconcile.
type phase func(ctx context.Context, s *scope) (ctrl.Result, error)

// +kubebuilder:rbac:groups=lvm.topolvm.io,resources=lvmclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=lvm.topolvm.io,resources=lvmclusters/status;lvmclusters/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=lvm.topolvm.io,resources=lvmvolumegroups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=lvm.topolvm.io,resources=lvmvolumegroupnodestatuses,verbs=get;list;watch
// +kubebuilder:rbac:groups=lvm.topolvm.io,resources=lvmvolumegroups/status;lvmvolumegroupnodestatuses/status,verbs=get;patch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses;csidrivers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshotclasses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=security.openshift.io,resources=securitycontextconstraints,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=security.openshift.io,resources=securitycontextconstraints,resourceNames=lvms-node,verbs=update;patch;delete
// +kubebuilder:rbac:groups=apps,namespace=lvms-system,resources=daemonsets;deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes;persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings the operands of one LVMCluster in line with its spec and reports their state.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	cluster := &lvmv1alpha1.LVMCluster{}
	if err := r.client.Get(ctx, req.NamespacedName, cluster); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{
		client: r.client, recorder: r.recorder, opts: r.opts, cluster: cluster, original: cluster.DeepCopy(),
		absent: r.absent,
	}
	defer func() { retErr = errors.Join(retErr, patchStatus(ctx, s, retErr)) }()

	if !cluster.DeletionTimestamp.IsZero() {
		return reconcileDelete(ctx, s)
	}
	if controllerutil.AddFinalizer(cluster, Finalizer) {
		if err := r.client.Patch(ctx, cluster, client.MergeFrom(s.original)); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
	}
	for _, p := range []phase{checkSingleton, applyOperands, observeVolumeGroups} {
		res, err := p(ctx, s)
		if err != nil || !res.IsZero() {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// errNotTheOne stops the reconcile of an LVMCluster that is not the cluster's only one.
var errNotTheOne = errors.New("not the cluster's LVMCluster")

// checkSingleton refuses to act on a second LVMCluster (the webhook normally rejects it): only the
// oldest one in the operator namespace is reconciled.
func checkSingleton(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	if c.Namespace != s.opts.Namespace {
		s.setFailed(
			ReasonDuplicateCluster,
			fmt.Sprintf("LVMCluster must be created in the operator namespace %q", s.opts.Namespace),
		)
		return ctrl.Result{}, nil
	}
	var list lvmv1alpha1.LVMClusterList
	if err := s.client.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("list LVMClusters: %w", err)
	}
	slices.SortFunc(list.Items, func(a, b lvmv1alpha1.LVMCluster) int {
		if d := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); d != 0 {
			return d
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if len(list.Items) > 0 && list.Items[0].Name != c.Name {
		s.setFailed(
			ReasonDuplicateCluster,
			fmt.Sprintf("only one LVMCluster is supported and %q already exists: delete this one", list.Items[0].Name),
		)
		return ctrl.Result{}, reconcile.TerminalError(errNotTheOne)
	}
	return ctrl.Result{}, nil
}

// applyOperands writes every operand; ResourcesAvailable says whether all succeeded.
func applyOperands(ctx context.Context, s *scope) (ctrl.Result, error) {
	var errs []error
	for _, u := range units() {
		if err := u.apply(ctx, s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u.name, err))
		}
	}
	cond := metav1.Condition{Type: lvmv1alpha1.ConditionResourcesAvailable, Status: metav1.ConditionTrue,
		Reason: ReasonApplied, Message: "all operands are applied"}
	err := errors.Join(errs...)
	if err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonApplyFailed, err.Error()
		s.recorder.Eventf(s.cluster, nil, corev1.EventTypeWarning, ReasonApplyFailed, "Apply", "%v", err)
	}
	s.setCondition(cond)
	return ctrl.Result{}, err
}

// observeVolumeGroups aggregates the node agents' reports into the status.
func observeVolumeGroups(ctx context.Context, s *scope) (ctrl.Result, error) {
	var nodes corev1.NodeList
	if err := s.client.List(ctx, &nodes); err != nil {
		return ctrl.Result{}, fmt.Errorf("list nodes: %w", err)
	}
	var reports lvmv1alpha1.LVMVolumeGroupNodeStatusList
	if err := s.client.List(ctx, &reports, client.InNamespace(s.opts.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("list LVMVolumeGroupNodeStatuses: %w", err)
	}
	agg := aggregate(s.cluster, nodes.Items, reports.Items)
	st := &s.cluster.Status
	if st.State != agg.state && st.State != "" {
		typ := corev1.EventTypeNormal
		if agg.state == lvmv1alpha1.LVMStatusFailed || agg.state == lvmv1alpha1.LVMStatusDegraded {
			typ = corev1.EventTypeWarning
		}
		s.recorder.Eventf(
			s.cluster,
			nil,
			typ,
			string(agg.state),
			"Observe",
			"LVMCluster is %s: %s",
			agg.state,
			agg.condition.Message,
		)
	}
	st.DeviceClassStatuses = agg.deviceClasses
	st.State = agg.state
	s.setCondition(agg.condition)
	return ctrl.Result{}, errors.Join(
		applyVolumeGroupConditions(ctx, s, agg.deviceClasses),
		applyNodeSummaries(ctx, s, reports.Items),
	)
}

func (s *scope) setCondition(c metav1.Condition) {
	c.ObservedGeneration = s.cluster.Generation
	meta.SetStatusCondition(&s.cluster.Status.Conditions, c)
}

func (s *scope) setFailed(reason, msg string) {
	s.cluster.Status.State = lvmv1alpha1.LVMStatusFailed
	s.setCondition(metav1.Condition{Type: lvmv1alpha1.ConditionResourcesAvailable, Status: metav1.ConditionFalse,
		Reason: reason, Message: msg})
}

// patchStatus writes the status once per reconcile; ObservedGeneration advances only when the
// reconcile succeeded.
func patchStatus(ctx context.Context, s *scope, reconcileErr error) error {
	st := &s.cluster.Status
	st.Ready = st.State == lvmv1alpha1.LVMStatusReady
	if reconcileErr == nil {
		st.ObservedGeneration = s.cluster.Generation
	}
	if err := s.client.Status().Patch(ctx, s.cluster, client.MergeFrom(s.original)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patch LVMCluster status: %w", err))
	}
	return nil
}
