package vgmanager_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoapplyconfigurations "k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	lvmv1alpha1apply "github.com/lvm-operator/lvm-operator/api/v1alpha1/applyconfiguration"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

const (
	ns       = "lvms-system"
	nodeName = "node-a"
)

// sink records the lvmd configurations it receives.
type sink struct {
	mu  sync.Mutex
	cfg []*lvmd.Config
}

func (s *sink) Replace(cfg *lvmd.Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = append(s.cfg, cfg)
	return nil
}

func (s *sink) classes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cfg) == 0 {
		return nil
	}
	var out []string
	for _, dc := range s.cfg[len(s.cfg)-1].DeviceClasses {
		out = append(out, dc.Name)
	}
	return out
}

type env struct {
	t        *testing.T
	client   client.Client
	node     *node
	sink     *sink
	recorder *events.FakeRecorder
	// stateChanges counts the calls of Options.StateChanged.
	stateChanges int
	r            *vgmanager.Reconciler
}

// Functional options for test objects.
type vgOption func(*lvmv1alpha1.LVMVolumeGroup)

func spec(s lvmv1alpha1.LVMVolumeGroupSpec) vgOption {
	return func(vg *lvmv1alpha1.LVMVolumeGroup) { vg.Spec = s }
}

func ownedBy(c *lvmv1alpha1.LVMCluster) vgOption {
	return func(vg *lvmv1alpha1.LVMVolumeGroup) {
		vg.OwnerReferences = []metav1.OwnerReference{
			{APIVersion: lvmv1alpha1.SchemeGroupVersion.String(), Kind: "LVMCluster",
				Name: c.Name, UID: c.UID, Controller: ptr.To(true)},
		}
	}
}

// newVG is an LVMVolumeGroup as the operator makes it, with its finalizer.
func newVG(name string, opts ...vgOption) *lvmv1alpha1.LVMVolumeGroup {
	vg := &lvmv1alpha1.LVMVolumeGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Finalizers: []string{lvmv1alpha1.VolumeGroupCleanupFinalizer}}}
	for _, o := range opts {
		o(vg)
	}
	return vg
}

func newCluster(annotations map[string]string) *lvmv1alpha1.LVMCluster {
	return &lvmv1alpha1.LVMCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "my-lvmcluster", Namespace: ns, UID: "cluster-uid",
			Annotations: annotations},
	}
}

func newEnv(t *testing.T, n *node, objs ...client.Object) *env {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := lvmv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	k8sNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{"storage": "yes"}}}
	cl := fake.NewClientBuilder().WithScheme(scheme).
		WithTypeConverters(
			clientgoapplyconfigurations.NewTypeConverter(clientgoscheme.Scheme),
			lvmv1alpha1apply.NewTypeConverter(scheme),
		).
		WithObjects(append(objs, k8sNode)...).Build()
	e := &env{t: t, client: cl, node: n, sink: &sink{}, recorder: events.NewFakeRecorder(100)}
	e.r = vgmanager.New(vgmanager.Options{
		Client: cl, Recorder: e.recorder, Disks: n.disks, LVM: n.lvm, Sink: e.sink,
		NodeName: nodeName, Namespace: ns, ResolvePath: n.resolve,
		StateChanged: func() { e.stateChanges++ },
	})
	return e
}

func (e *env) reconcile(name string) ctrl.Result {
	e.t.Helper()
	res, err := e.r.Reconcile(
		ctrl.LoggerInto(e.t.Context(), testr.New(e.t)),
		ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}},
	)
	if err != nil {
		e.t.Fatalf("reconcile %s: %v", name, err)
	}
	return res
}

func (e *env) vg(name string) *lvmv1alpha1.LVMVolumeGroup {
	e.t.Helper()
	vg := &lvmv1alpha1.LVMVolumeGroup{}
	if err := e.client.Get(e.t.Context(), client.ObjectKey{Namespace: ns, Name: name}, vg); err != nil {
		e.t.Fatal(err)
	}
	return vg
}

// entries returns this node's status entries by volume group name.
func (e *env) entries() map[string]lvmv1alpha1.VGStatus {
	e.t.Helper()
	st := &lvmv1alpha1.LVMVolumeGroupNodeStatus{}
	err := e.client.Get(e.t.Context(), client.ObjectKey{Namespace: ns, Name: nodeName}, st)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]lvmv1alpha1.VGStatus{}
	for _, s := range st.Spec.LiveNodeStatus {
		out[s.Name] = s
	}
	return out
}

func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func TestReconcileBuildsVolumeGroupAndReports(t *testing.T) {
	n := newNode([]string{"/dev/sdb", "/dev/sdc", "/dev/sdd"}, map[string][]string{"/dev/sdd": {"ext4"}})
	e := newEnv(
		t,
		n,
		newCluster(nil),
		newVG("vg1", spec(thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic)), ownedBy(newCluster(nil))),
	)

	res := e.reconcile("vg1")
	if res.RequeueAfter != vgmanager.DefaultDiscoveryInterval {
		t.Errorf("RequeueAfter %v, want the discovery interval for a Dynamic VG", res.RequeueAfter)
	}
	if got := e.vg("vg1").Finalizers; !slices.Equal(got, []string{lvmv1alpha1.VolumeGroupCleanupFinalizer}) {
		t.Errorf("finalizers %v: a node claims a volume group in its own status, not on the shared object", got)
	}
	got := e.entries()["vg1"]
	if got.Status != lvmv1alpha1.VGStatusReady || !slices.Equal(got.Devices, []string{"/dev/sdb", "/dev/sdc"}) ||
		len(
			got.Excluded,
		) != 1 || got.Excluded[0].Name != "/dev/sdd" || got.Excluded[0].Reasons[0] != "has a filesystem signature: ext4" {
		t.Errorf("node status entry %+v", got)
	}
	if c := e.sink.classes(); !slices.Equal(c, []string{"vg1"}) {
		t.Errorf("lvmd classes %v", c)
	}
	if dc := e.sink.cfg[len(e.sink.cfg)-1].DeviceClasses[0]; dc.Type != lvmd.TypeThin ||
		dc.ThinPool.OverprovisionRatio != 10 {
		t.Errorf("lvmd class %+v", dc)
	}
	if ev := e.events(); len(ev) != 1 ||
		!strings.Contains(ev[0], "will create volume group vg1 on /dev/sdb, /dev/sdc") {
		t.Errorf("events %q, want one announcing the plan", ev)
	}
	// lvmd hears of the new volume group; a reconcile with nothing to change tells it nothing.
	if e.stateChanges != 1 {
		t.Errorf("%d state changes reported after building the VG, want 1", e.stateChanges)
	}
	reads, feeds := n.fake.Count("fullreport"), len(e.sink.cfg)
	e.reconcile("vg1")
	if e.stateChanges != 1 {
		t.Errorf("%d state changes reported after a reconcile that changed nothing, want 1", e.stateChanges)
	}
	// That periodic pass reads the LVM state once (each read holds the VG lock lvcreate waits for),
	// and feeds lvmd from it.
	if got := n.fake.Count("fullreport") - reads; got != 1 {
		t.Errorf("a reconcile that changed nothing read the LVM state %d times, want 1", got)
	}
	if len(e.sink.cfg) != feeds+1 || !slices.Equal(e.sink.classes(), []string{"vg1"}) {
		t.Errorf("after a reconcile that changed nothing lvmd got %d feeds (want 1) with classes %v",
			len(e.sink.cfg)-feeds, e.sink.classes())
	}
}

func TestReconcileDryRunFromTheLVMCluster(t *testing.T) {
	cluster := newCluster(map[string]string{vgmanager.DryRunAnnotation: "true"})
	n := newNode([]string{"/dev/sdb", "/dev/sdc"}, map[string][]string{"/dev/sdc": {"ext4"}})
	e := newEnv(t, n, cluster, newVG("vg1", ownedBy(cluster),
		spec(withPaths(thinSpec(""), ptr.To(true), "/dev/sdb", "/dev/sdc"))))

	e.reconcile("vg1")
	if got := n.modifications(); len(got) != 0 {
		t.Fatalf("dry-run changed %q", got)
	}
	got := e.entries()["vg1"]
	if got.Status != lvmv1alpha1.VGStatusProgressing || !strings.Contains(got.Reason, "dry-run") ||
		!strings.Contains(got.Reason, "would wipe /dev/sdc") {
		t.Errorf("status %+v", got)
	}
	if _, wiped := e.vg("vg1").Annotations[vgmanager.WipedAnnotation(nodeName)]; wiped {
		t.Error("dry-run recorded a wipe")
	}
	if c := e.sink.classes(); len(c) != 0 {
		t.Errorf("lvmd got classes %v for a VG that does not exist", c)
	}
}

// TestReconcileFailsClosedWithoutItsOwner: an LVMVolumeGroup whose owning LVMCluster cannot be read
// (not in the cache yet, say) may be under dry-run; nothing is changed until the owner is known.
func TestReconcileFailsClosedWithoutItsOwner(t *testing.T) {
	n := newNode([]string{"/dev/sdb", "/dev/sdc"}, nil)
	e := newEnv(t, n, newVG("vg1", ownedBy(newCluster(nil)), spec(thinSpec(lvmv1alpha1.DeviceDiscoveryPolicyDynamic))))

	_, err := e.r.Reconcile(
		ctrl.LoggerInto(t.Context(), testr.New(t)),
		ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "vg1"}},
	)
	if !errors.Is(err, vgmanager.ErrOwnerUnknown) {
		t.Fatalf("reconcile: %v, want ErrOwnerUnknown", err)
	}
	if got := n.modifications(); len(got) != 0 {
		t.Fatalf("changed %q without knowing whether dry-run is asked for", got)
	}
	if c := e.sink.classes(); len(c) != 0 {
		t.Errorf("lvmd got classes %v", c)
	}
}

func TestReconcileWipesOncePerNode(t *testing.T) {
	n := newNode([]string{"/dev/sdb", "/dev/sdc", "/dev/sdd"}, map[string][]string{"/dev/sdc": {"xfs"}})
	e := newEnv(
		t,
		n,
		newVG("vg1", spec(withPaths(lvmv1alpha1.LVMVolumeGroupSpec{}, ptr.To(true), "/dev/sdb", "/dev/sdc"))),
	)

	e.reconcile("vg1")
	if got := n.disks.Wiped(); !slices.Equal(got, []string{"/dev/sdc"}) {
		t.Fatalf("wiped %q", got)
	}
	if e.vg("vg1").Annotations[vgmanager.WipedAnnotation(nodeName)] == "" {
		t.Fatal("the wipe was not recorded on the LVMVolumeGroup")
	}
	// A new disk with data is added to the paths: recorded wipe, no second wipe.
	n.disks.devs[2].Facts.Signatures = []string{"ext4"}
	vg := e.vg("vg1")
	vg.Spec.DeviceSelector.Paths = append(vg.Spec.DeviceSelector.Paths, "/dev/sdd")
	if err := e.client.Update(t.Context(), vg); err != nil {
		t.Fatal(err)
	}
	e.reconcile("vg1")
	if got := n.disks.Wiped(); len(got) != 1 {
		t.Fatalf("wiped %q, want the first wipe only", got)
	}
	if got := e.entries()["vg1"]; got.Status != lvmv1alpha1.VGStatusDegraded ||
		!strings.Contains(got.Reason, "/dev/sdd") {
		t.Errorf("status %+v", got)
	}
}

func TestReconcileSkipsOtherNodes(t *testing.T) {
	n := newNode([]string{"/dev/sdb"}, nil)
	s := thinSpec("")
	s.NodeSelector = &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "storage", Operator: corev1.NodeSelectorOpIn, Values: []string{"other"}}}}},
	}
	e := newEnv(t, n, newVG("vg1", spec(s)))
	if res := e.reconcile("vg1"); !res.IsZero() {
		t.Errorf("result %+v", res)
	}
	if len(e.vg("vg1").Finalizers) != 1 || e.entries() != nil || len(n.lvmChanges()) != 0 {
		t.Error("a volume group of other nodes was acted on")
	}
}

func TestReconcileDeletion(t *testing.T) {
	n := newNode([]string{"/dev/sdb", "/dev/sdc"}, nil)
	e := newEnv(t, n, newVG("vg1", spec(withPaths(thinSpec(""), nil, "/dev/sdb"))),
		newVG("vg2", spec(withPaths(lvmv1alpha1.LVMVolumeGroupSpec{}, nil, "/dev/sdc"))))
	e.reconcile("vg1")
	e.reconcile("vg2")
	if got := e.entries(); len(got) != 2 || got["vg1"].Status != lvmv1alpha1.VGStatusReady ||
		got["vg2"].Status != lvmv1alpha1.VGStatusReady {
		t.Fatalf("entries %+v", got)
	}
	n.addThinLV("vg1", "pvc-1")
	if err := e.client.Delete(t.Context(), e.vg("vg1")); err != nil {
		t.Fatal(err)
	}
	e.events()

	// A volume still exists: refused, with an event and the reason in the status.
	if res := e.reconcile("vg1"); res.RequeueAfter == 0 {
		t.Error("a blocked deletion must be looked at again")
	}
	if got := e.entries()["vg1"]; got.Status != lvmv1alpha1.VGStatusDegraded || !strings.Contains(got.Reason, "pvc-1") {
		t.Errorf("status %+v", got)
	}
	if ev := e.events(); len(ev) != 1 || !strings.Contains(ev[0], vgmanager.EventDeletionBlocked) {
		t.Errorf("events %q", ev)
	}
	if _, ok := e.entries()["vg1"]; !ok {
		t.Fatal("claim dropped while volumes exist")
	}
	if c := e.sink.classes(); !slices.Equal(c, []string{"vg1", "vg2"}) {
		t.Errorf("lvmd classes %v: a class being deleted must stay while its volumes exist", c)
	}

	// The volume is gone: pool, VG and PV labels are removed, then the entry.
	n.fake.Apply(lvm.RemoveLVOp{VG: "vg1", Name: "pvc-1"})
	n.fake.Reset()
	e.reconcile("vg1")
	// The Client removes a pool in two steps: deactivate, then lvremove without -y.
	if got := n.modifications(); !slices.Equal(got, []string{"lvm lvchange -an vg1/tp", "lvm lvremove vg1/tp",
		"lvm vgremove vg1", "lvm pvremove -y /dev/sdb"}) {
		t.Errorf("changes %q", got)
	}
	// The claim is dropped; the operator's finalizer goes once no node claims the volume group
	// (internal/controller/vgcleanup).
	if got := e.entries(); len(got) != 1 || got["vg2"].Status != lvmv1alpha1.VGStatusReady {
		t.Errorf("entries %+v, want only vg2's", got)
	}
	if c := e.sink.classes(); !slices.Equal(c, []string{"vg2"}) {
		t.Errorf("lvmd classes %v", c)
	}
}

// Without a volume group for this node no reconcile runs, yet lvmd must learn that it has no
// classes (until then it answers every LV request with "not loaded yet"); with one, the first feed
// lists it.
func TestFeedLVMDAtStart(t *testing.T) {
	t.Run("no volume groups", func(t *testing.T) {
		e := newEnv(t, newNode(nil, nil))
		if err := e.r.FeedLVMDAtStart(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(e.sink.cfg) != 1 || len(e.sink.cfg[0].DeviceClasses) != 0 {
			t.Fatalf("lvmd configs %+v, want one with no classes", e.sink.cfg)
		}
	})
	t.Run("an existing volume group", func(t *testing.T) {
		n := newNode([]string{"/dev/sdb"}, nil)
		n.addVG("vg1", []string{"/dev/sdb"}, lvm.Tag)
		e := newEnv(t, n, newVG("vg1"))
		if err := e.r.FeedLVMDAtStart(t.Context()); err != nil {
			t.Fatal(err)
		}
		if c := e.sink.classes(); !slices.Equal(c, []string{"vg1"}) {
			t.Fatalf("lvmd classes %v, want vg1", c)
		}
	})
}

func TestReconcileRefusesForeignVolumeGroup(t *testing.T) {
	n := newNode([]string{"/dev/sdb"}, nil)
	n.addVG("vg1", []string{"/dev/sdb"}) // no @lvms tag
	e := newEnv(t, n, newVG("vg1", spec(thinSpec(""))))
	e.reconcile("vg1")
	if got := e.entries()["vg1"]; got.Status != lvmv1alpha1.VGStatusFailed ||
		!strings.Contains(got.Reason, "without the @"+lvm.Tag+" tag") {
		t.Errorf("status %+v", got)
	}
	if got := n.modifications(); len(got) != 0 {
		t.Errorf("changes %q", got)
	}
	if c := e.sink.classes(); len(c) != 0 {
		t.Errorf("lvmd got classes %v for a foreign VG", c)
	}
}
