package logicalvolume

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoapplyconfigurations "k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	topolvmapply "github.com/lvm-operator/lvm-operator/api/topolvm/v1/applyconfiguration"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvm/lvmtest"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

const (
	mib    = int64(1) << 20
	gib    = int64(1) << 30
	extent = 4 * mib
	node   = "node-a"
)

// testConfig: thick class "thick" (default, spare 1 GiB), thin class "thin" (ratio 2) on VG "vg",
// a class "missing" on a VG that does not exist, and option class "striped".
func testConfig() *lvmd.Config {
	spare := uint64(1)
	return &lvmd.Config{
		DeviceClasses: []lvmd.DeviceClass{
			{Name: "thick", VolumeGroup: "vg", Default: true, SpareGB: &spare},
			{Name: "thin", VolumeGroup: "vg", Type: lvmd.TypeThin,
				ThinPool: &lvmd.ThinPoolConfig{Name: "pool", OverprovisionRatio: 2}},
			{Name: "missing", VolumeGroup: "novg"},
		},
		LVCreateOptionClasses: []lvmd.LVCreateOptionClass{{Name: "striped", Options: []string{"--alloc", "anywhere"}}},
	}
}

// newFakeLVM is VG "vg" of 10 GiB (4 MiB extents, tagged lvms) with thin pool "pool" of 4 GiB.
func newFakeLVM() *lvmtest.LVM {
	f := lvmtest.New()
	f.AddVG("vg", uint64(10*gib), uint64(extent), lvm.Tag)
	f.AddThinPool("vg", "pool", uint64(4*gib))
	return f
}

func newService(t *testing.T, f *lvmtest.LVM) *lvmd.Service {
	t.Helper()
	classes, err := lvmd.NewDeviceClassManager(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lvmd.NewService(lvmd.Options{Executor: f, Classes: classes, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

type env struct {
	t      *testing.T
	fake   *lvmtest.LVM
	svc    *lvmd.Service
	client client.Client
	r      *Reconciler
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := topolvmv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func newClient(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) client.Client {
	t.Helper()
	s := newScheme(t)
	b := fake.NewClientBuilder().WithScheme(s).
		WithStatusSubresource(&topolvmv1.LogicalVolume{}).
		WithTypeConverters(clientgoapplyconfigurations.NewTypeConverter(s), topolvmapply.NewTypeConverter(s)).
		WithObjects(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

// newEnv is a reconciler for node-a on a fresh fake LVM, with objs in the API.
func newEnv(t *testing.T, objs ...client.Object) *env {
	t.Helper()
	f := newFakeLVM()
	cl := newClient(t, nil, objs...)
	return newEnvOn(t, f, cl)
}

// newEnvOn is a reconcilier on f and cl whose LVs all have their device nodes.
func newEnvOn(t *testing.T, f *lvmtest.LVM, cl client.Client) *env {
	t.Helper()
	return newEnvStat(t, f, cl, func(string) error { return nil })
}

// newEnvStat is newEnvOn with stat answering whether a device node exists.
func newEnvStat(t *testing.T, f *lvmtest.LVM, cl client.Client, stat func(string) error) *env {
	t.Helper()
	svc := newService(t, f)
	r, err := New(Options{Client: cl, APIReader: cl, NodeName: node, LVM: svc, StatDevice: stat})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, fake: f, svc: svc, client: cl, r: r}
}

func (e *env) reconcile(name string) error {
	e.t.Helper()
	_, err := e.r.Reconcile(e.t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
	return err
}

func (e *env) mustReconcile(name string) {
	e.t.Helper()
	if err := e.reconcile(name); err != nil {
		e.t.Fatalf("reconcile %s: %v", name, err)
	}
}

func (e *env) get(name string) *topolvmv1.LogicalVolume {
	e.t.Helper()
	lv := &topolvmv1.LogicalVolume{}
	if err := e.client.Get(e.t.Context(), types.NamespacedName{Name: name}, lv); err != nil {
		e.t.Fatalf("get %s: %v", name, err)
	}
	return lv
}

// update changes the object as a spec update would (generation + 1).
func (e *env) update(name string, f func(*topolvmv1.LogicalVolume)) {
	e.t.Helper()
	lv := e.get(name)
	f(lv)
	lv.Generation++
	if err := e.client.Update(e.t.Context(), lv); err != nil {
		e.t.Fatal(err)
	}
}

type lvOpt func(*topolvmv1.LogicalVolume)

// newLV is a 1 GiB LogicalVolume of class thick on node-a with UID uid-<name>.
func newLV(name string, opts ...lvOpt) *topolvmv1.LogicalVolume {
	lv := &topolvmv1.LogicalVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: topolvmv1.LogicalVolumeSpec{
			Name: name, NodeName: node, Size: *resource.NewQuantity(gib, resource.BinarySI), DeviceClass: "thick",
		},
	}
	for _, o := range opts {
		o(lv)
	}
	return lv
}

func class(c string) lvOpt { return func(lv *topolvmv1.LogicalVolume) { lv.Spec.DeviceClass = c } }

func size(n int64) lvOpt {
	return func(lv *topolvmv1.LogicalVolume) { lv.Spec.Size = *resource.NewQuantity(n, resource.BinarySI) }
}

func optionClass(c string) lvOpt {
	return func(lv *topolvmv1.LogicalVolume) { lv.Spec.LvcreateOptionClass = c }
}

func onNode(n string) lvOpt { return func(lv *topolvmv1.LogicalVolume) { lv.Spec.NodeName = n } }

func source(id string, at topolvmv1.AccessType) lvOpt {
	return func(lv *topolvmv1.LogicalVolume) { lv.Spec.Source, lv.Spec.AccessType = id, at }
}

func volumeID(id string) lvOpt { return func(lv *topolvmv1.LogicalVolume) { lv.Status.VolumeID = id } }

func condition(lv *topolvmv1.LogicalVolume, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(lv.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func isTerminal(err error) bool { return errors.Is(err, reconcile.TerminalError(nil)) }

func currentSize(lv *topolvmv1.LogicalVolume) int64 {
	if lv.Status.CurrentSize == nil {
		return -1
	}
	return lv.Status.CurrentSize.Value()
}
