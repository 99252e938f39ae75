package transfertoken

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	topolvmac "github.com/lvm-operator/lvm-operator/api/topolvm/v1/applyconfiguration/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/controller/logicalvolume"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/snapmeta"
	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// +kubebuilder:rbac:groups=topolvm.io,resources=logicalvolumes,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=topolvm.io,resources=logicalvolumes/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

const (
	// FieldOwner is the field manager of the status fields the operator writes (the token, its
	// attempt and the source's address).
	FieldOwner = "lvms-operator-transfer"
	// DefaultTokenTTL is how long a token is good for: an attempt starts at once, and a token is
	// used once.
	DefaultTokenTTL = 10 * time.Minute
	// agentMissingRetry is how soon a transfer whose source node has no running agent is looked at
	// again.
	agentMissingRetry = 5 * time.Second
)

// Options configure the Reconciler.
type Options struct {
	// Client reads LogicalVolumes from the cache and applies the status fields; Pods lists the node
	// agents' Pods (the API server: a token is issued rarely, and the operator caches no Pods of its
	// namespace), default Client.
	Client client.Client
	Pods   client.Reader
	// Key signs the tokens (the transfer authority's).
	Key ed25519.PrivateKey
	// Namespace of the node agents' Pods; AgentLabels select them; Port is their Transfer service's.
	Namespace   string
	AgentLabels map[string]string
	Port        int
	// Recorder records the copy's events on its claim (driver.AnnotationClaim); Reader reads the
	// claim from the API server. Both nil records none.
	Recorder events.EventRecorder
	Reader   client.Reader
	// TTL of the tokens (default DefaultTokenTTL); Now is the clock (default time.Now).
	TTL time.Duration
	Now func() time.Time
}

// Reconciler issues the tokens of copies between nodes.
type Reconciler struct {
	o Options
	// completed holds the UIDs whose CopyComplete event was recorded.
	completed sync.Map
}

// New returns the Reconciler.
func New(o Options) (*Reconciler, error) {
	if o.Client == nil || len(o.Key) != ed25519.PrivateKeySize || o.Namespace == "" || o.Port == 0 ||
		len(o.AgentLabels) == 0 {
		return nil, errors.New("transfer tokens: Client, Key, Namespace, AgentLabels and Port are required")
	}
	if o.TTL == 0 {
		o.TTL = DefaultTokenTTL
	}
	if o.Pods == nil {
		o.Pods = o.Client
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Reconciler{o: o}, nil
}

// SetupWithManager watches the LogicalVolumes that copy from another node, and the images of
// clones (image.go), which wake their clone.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("transfertoken").
		For(&topolvmv1.LogicalVolume{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			lv, ok := o.(*topolvmv1.LogicalVolume)
			return ok && lv.Spec.SourceNode != ""
		}), predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			lv := e.ObjectNew.(*topolvmv1.LogicalVolume)
			return needsToken(lv) || justCompleted(lv, time.Now()) || completedWithImage(lv)
		}})).
		Owns(&topolvmv1.LogicalVolume{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return strings.HasPrefix(o.GetName(), ImagePrefix)
		}))).
		Complete(r)
}

// completedWithImage reports whether lv is a clone whose copy is complete (its image is deleted).
func completedWithImage(lv *topolvmv1.LogicalVolume) bool {
	t := lv.Status.Transfer
	return needsImage(lv) && t != nil && t.Phase == topolvmv1.TransferComplete
}

// needsToken reports whether the node waits for the token of its current attempt.
func needsToken(lv *topolvmv1.LogicalVolume) bool {
	t := lv.Status.Transfer
	return lv.Spec.SourceNode != "" && lv.DeletionTimestamp.IsZero() && t != nil && t.Attempt > 0 &&
		t.Phase != topolvmv1.TransferComplete && t.TokenAttempt != t.Attempt
}

// completedRecently bounds how long after a copy completed its CopyComplete event is recorded (once
// per operator process; a restart within it may record it again).
const completedRecently = 2 * time.Minute

// justCompleted reports whether lv's copy completed within completedRecently of now.
func justCompleted(lv *topolvmv1.LogicalVolume, now time.Time) bool {
	t := lv.Status.Transfer
	return t != nil && t.Phase == topolvmv1.TransferComplete && t.CompletionTime != nil &&
		now.Sub(t.CompletionTime.Time) < completedRecently
}

// Reconcile issues the token of the current attempt of one LogicalVolume, and reports a copy that
// has just completed on its claim.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	lv := &topolvmv1.LogicalVolume{}
	if err := r.o.Client.Get(ctx, req.NamespacedName, lv); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if completedWithImage(lv) {
		if err := r.dropImage(ctx, lv); err != nil {
			return ctrl.Result{}, err
		}
	}
	if justCompleted(lv, r.o.Now()) {
		if _, seen := r.completed.LoadOrStore(lv.UID, true); !seen {
			t := lv.Status.Transfer
			r.event(ctx, lv, corev1.EventTypeNormal, ReasonCopyComplete,
				"copied %s from node %s: %d bytes in %d attempts, verified", lv.Spec.Source, lv.Spec.SourceNode,
				t.CopiedBytes, t.Attempt)
		}
		return ctrl.Result{}, nil
	}
	if !needsToken(lv) {
		return ctrl.Result{}, nil
	}
	// The source's volume ID is its LV's name on the source node, in the same device class (the CSI
	// controller copies only within a class); a clone's source is its image. A source that is gone
	// is reported by the source node's agent (NotFound), which fails the LogicalVolume.
	source, err := r.imageSource(ctx, lv)
	if err != nil || source == "" {
		return ctrl.Result{}, err
	}
	addr, err := snapmeta.AgentAddress(ctx, r.o.Pods, r.o.Namespace, r.o.AgentLabels, lv.Spec.SourceNode, r.o.Port)
	if err != nil || addr == "" {
		return ctrl.Result{RequeueAfter: agentMissingRetry}, err
	}
	attempt := lv.Status.Transfer.Attempt
	token, err := transfer.Issue(r.o.Key, transfer.Claims{
		Source:  transfer.Volume{Node: lv.Spec.SourceNode, Class: lv.Spec.DeviceClass, LV: source},
		Target:  transfer.Volume{Node: lv.Spec.NodeName, Class: lv.Spec.DeviceClass, LV: logicalvolume.LVName(lv)},
		Expires: r.o.Now().Add(r.o.TTL),
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	ac := topolvmac.LogicalVolume(lv.Name).WithStatus(topolvmac.LogicalVolumeStatus().WithTransfer(
		topolvmac.TransferStatus().WithToken(token).WithTokenAttempt(attempt).WithSourceAddress(addr)))
	if err := r.o.Client.Status().Apply(ctx, ac, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("apply the transfer token of LogicalVolume %s: %w",
			lv.Name, err))
	}
	ctrl.LoggerFrom(ctx).Info("Issued a transfer token", "logicalVolume", lv.Name, "attempt", attempt,
		"sourceNode", lv.Spec.SourceNode, "targetNode", lv.Spec.NodeName, "sourceAddress", addr)
	if attempt == 1 {
		r.event(ctx, lv, corev1.EventTypeNormal, ReasonCopyStarted, "copying %s from node %s to node %s",
			lv.Spec.Source, lv.Spec.SourceNode, lv.Spec.NodeName)
	} else {
		r.event(ctx, lv, corev1.EventTypeWarning, ReasonCopyRetried,
			"attempt %d copies %s from node %s, resuming at byte %d (%s)", attempt, lv.Spec.Source,
			lv.Spec.SourceNode, lv.Status.Transfer.VerifiedBytes, lv.Status.Transfer.Message)
	}
	return ctrl.Result{}, nil
}

// Event reasons on the claim of a copy.
const (
	ReasonCopyStarted  = "CopyStarted"
	ReasonCopyRetried  = "CopyRetried"
	ReasonCopyComplete = "CopyComplete"
)

// event records an event on lv's claim, when it names one that exists.
func (r *Reconciler) event(ctx context.Context, lv *topolvmv1.LogicalVolume, typ, reason, format string,
	args ...any,
) {
	ns, name, ok := strings.Cut(lv.Annotations[driver.AnnotationClaim], "/")
	if !ok || r.o.Recorder == nil || r.o.Reader == nil {
		return
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.o.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("No claim to record the copy's event on", "claim", ns+"/"+name,
			"error", err.Error())
		return
	}
	r.o.Recorder.Eventf(pvc, lv, typ, reason, "Copy", format, args...)
}
