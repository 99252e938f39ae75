package kubectlplugin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// planFile is the LVMCluster the plan tests preview.
const planFile = "testdata/plan-lvmcluster.yaml"

// planRecorder is a fake cluster for plan: it counts the writes and the reads of the LVMCluster, and
// before the read number n it sets the status stages[n] on it, as the operator would (stages
// beyond the last keep the last one).
type planRecorder struct {
	mu       sync.Mutex
	stages   []lvmv1alpha1.LVMClusterStatus
	gets     int
	writes   []string
	creation client.CreateOptions
}

func (r *planRecorder) funcs() *interceptor.Funcs {
	write := func(verb string) { r.mu.Lock(); r.writes = append(r.writes, verb); r.mu.Unlock() }
	return &interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			write("create")
			r.mu.Lock()
			r.creation.ApplyOptions(opts)
			r.mu.Unlock()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			write("update")
			return errors.New("plan must not update")
		},
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			write("patch")
			return errors.New("plan must not patch")
		},
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
			write("delete")
			return errors.New("plan must not delete")
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object,
			opts ...client.GetOption) error {
			lc, ok := obj.(*lvmv1alpha1.LVMCluster)
			if !ok || len(r.stages) == 0 {
				return c.Get(ctx, key, obj, opts...)
			}
			r.mu.Lock()
			stage := r.stages[min(r.gets, len(r.stages)-1)]
			r.gets++
			r.mu.Unlock()
			if err := c.Get(ctx, key, lc, opts...); err != nil {
				return err
			}
			if stage.ObservedGeneration == 0 {
				stage.ObservedGeneration = lc.Generation // the operator has seen the spec
			}
			lc.Status = stage
			// The operator's write, through the status subresource.
			if err := c.Status().Update(ctx, lc); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}
}

// newPlanClient is a fake cluster holding objs, with the LVMCluster status subresource.
func newPlanClient(t *testing.T, r *planRecorder, objs ...client.Object) client.Client {
	t.Helper()
	s, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&lvmv1alpha1.LVMCluster{}).WithInterceptorFuncs(*r.funcs()).Build()
}

// planOptions runs plan on planFile with a fast poll.
func planOptions(output string) PlanOptions {
	return PlanOptions{
		Options: Options{OperatorNamespace: testOperatorNamespace, Output: output},
		File:    planFile, Timeout: 5 * time.Second, PollInterval: time.Millisecond,
	}
}

// plannedStatus is what the operator reports for planFile once every node planned: node-0 would wipe
// /dev/vdc and build vg1 with its thin pool, node-1 lacks /dev/vdc, node-2 has vg1 already (a
// reinstall); no node has NVMe disks for fast.
func plannedStatus() lvmv1alpha1.LVMClusterStatus {
	ex := func(name string, reasons ...string) lvmv1alpha1.ExcludedDevice {
		return lvmv1alpha1.ExcludedDevice{Name: name, Reasons: reasons}
	}
	vg := func(st lvmv1alpha1.VGStatusType, reason string, excluded ...lvmv1alpha1.ExcludedDevice) lvmv1alpha1.VGStatus {
		return lvmv1alpha1.VGStatus{Name: "vg1", Status: st, Reason: reason, Excluded: excluded}
	}
	ready := vg(lvmv1alpha1.VGStatusReady, "", ex("/dev/mapper/vg1-thin--pool", "is an LVM logical volume (type lvm)"),
		ex("/dev/vda", "is mounted at /", "is not in the device selector"))
	ready.Devices = []string{"/dev/vdb", "/dev/vdc"}
	return lvmv1alpha1.LVMClusterStatus{
		State: lvmv1alpha1.LVMStatusFailed,
		DeviceClassStatuses: []lvmv1alpha1.DeviceClassStatus{
			{Name: "vg1", NodeStatus: []lvmv1alpha1.NodeStatus{
				{Node: "node-0", VGStatus: vg(lvmv1alpha1.VGStatusProgressing, lvmv1alpha1.DryRunReasonPrefix+
					"wipe /dev/vdc (deviceSelector.forceWipeDevicesAndDestroyAllData); "+
					"create volume group vg1 on /dev/vdb, /dev/vdc; create thin pool thin-pool with 90% of the free space",
					ex("/dev/vda", "has children: vda1, vda2", "is not in the device selector"),
					ex("/dev/vdc", "has a filesystem signature: xfs", lvmv1alpha1.ExcludedWillBeWiped))},
				{Node: "node-1", VGStatus: vg(lvmv1alpha1.VGStatusFailed,
					"deviceSelector.paths not found on node node-1: /dev/vdc",
					ex("/dev/vda", "has children: vda1", "is not in the device selector"),
					ex("/dev/vdd", "is not in the device selector"))},
				{Node: "node-2", VGStatus: ready},
			}},
			{Name: "fast"},
		},
	}
}

// waitingStatus is the status while node-1's agent has not reported.
func waitingStatus() lvmv1alpha1.LVMClusterStatus {
	st := plannedStatus()
	st.State = lvmv1alpha1.LVMStatusProgressing
	st.DeviceClassStatuses[0].NodeStatus[1].VGStatus = lvmv1alpha1.VGStatus{
		Name: "vg1", Status: lvmv1alpha1.VGStatusProgressing, Reason: lvmv1alpha1.ReasonWaitingForNodeAgent,
	}
	return st
}

// TestPlanGolden creates the plan of planFile, waits while the operator reports nothing, then one
// node is missing, and writes the plan once every node reported.
func TestPlanGolden(t *testing.T) {
	for _, tc := range []struct{ name, output string }{{"plan", OutputTable}, {"plan.json", OutputJSON}} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &planRecorder{stages: []lvmv1alpha1.LVMClusterStatus{{}, waitingStatus(), plannedStatus()}}
			c := newPlanClient(t, rec)
			var out bytes.Buffer
			if err := RunPlan(context.Background(), c, planOptions(tc.output), &out); err != nil {
				t.Fatalf("plan: %v", err)
			}
			if rec.gets < 3 {
				t.Errorf("plan read the LVMCluster %d times: it did not wait for every node", rec.gets)
			}
			if got := strings.Join(rec.writes, ","); got != "create" {
				t.Errorf("writes = %q, want one create", got)
			}
			if rec.creation.FieldManager != PlanFieldManager {
				t.Errorf("field manager %q, want %q", rec.creation.FieldManager, PlanFieldManager)
			}
			var lc lvmv1alpha1.LVMCluster
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: testOperatorNamespace,
				Name: "my-lvmcluster"}, &lc); err != nil {
				t.Fatal(err)
			}
			if lc.Annotations[lvmv1alpha1.DryRunAnnotation] != "true" || lc.Annotations["owner"] != "storage-team" ||
				lc.Labels["app.kubernetes.io/part-of"] != "storage" || len(lc.Spec.Storage.DeviceClasses) != 2 {
				t.Errorf("created LVMCluster: annotations %v, labels %v, spec %+v", lc.Annotations, lc.Labels, lc.Spec)
			}
			compareTestGolden(t, tc.name, out.String())
		})
	}
}

// TestPlanJSONRoundTrip checks that -o json carries the whole report.
func TestPlanJSONRoundTrip(t *testing.T) {
	rec := &planRecorder{stages: []lvmv1alpha1.LVMClusterStatus{plannedStatus()}}
	var out bytes.Buffer
	if err := RunPlan(context.Background(), newPlanClient(t, rec), planOptions(OutputJSON), &out); err != nil {
		t.Fatal(err)
	}
	lc := &lvmv1alpha1.LVMCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: testOperatorNamespace, Name: "my-lvmcluster"},
	}
	lc.Spec = readTestPlanFile(t).Spec
	lc.Status = plannedStatus()
	assertDecodesTo(t, &out, &PlanReport{}, buildPlanReport(lc))
}

// TestPlanExisting checks what plan does with the LVMClusters that already exist: it shows its own
// plan again without writing, and refuses, without writing, any other.
func TestPlanExisting(t *testing.T) {
	file := readTestPlanFile(t)
	planned := func(mutate func(*lvmv1alpha1.LVMCluster)) client.Object {
		lc := file.DeepCopy()
		lc.Namespace = testOperatorNamespace
		lc.Annotations = map[string]string{lvmv1alpha1.DryRunAnnotation: "true"}
		if mutate != nil {
			mutate(lc)
		}
		return lc
	}
	digest, err := specDigest(file.Spec)
	if err != nil {
		t.Fatal(err)
	}
	defaulted := func(lc *lvmv1alpha1.LVMCluster) {
		lc.Generation = 1
		lc.Annotations[PlanSpecAnnotation] = digest
		lc.Spec.Storage.DeviceClasses[0].FilesystemType = lvmv1alpha1.FilesystemTypeXFS
	}
	cases := []struct {
		name     string
		existing client.Object
		want     string // "" for success
	}{
		{name: "the identical plan", existing: planned(nil)},
		{name: "its plan with the API server's defaults", existing: planned(defaulted)},
		{name: "a plan of another spec", existing: planned(func(lc *lvmv1alpha1.LVMCluster) {
			lc.Spec.Storage.DeviceClasses[0].ThinPoolConfig.SizePercent = 50
		}), want: "lvms-system/my-lvmcluster is a dry-run plan of a different spec: delete it first " +
			"(kubectl delete lvmcluster my-lvmcluster -n lvms-system; safe"},
		{name: "its plan changed since", existing: planned(func(lc *lvmv1alpha1.LVMCluster) {
			defaulted(lc)
			lc.Generation = 2
		}), want: "is a dry-run plan of a different spec"},
		{name: "an applied LVMCluster of the same name", existing: planned(func(lc *lvmv1alpha1.LVMCluster) {
			lc.Annotations = nil
		}), want: "lvms-system/my-lvmcluster is applied (not a dry-run); plan previews an LVMCluster before it is applied"},
		{
			name:     "an applied LVMCluster",
			existing: lvmCluster(),
			want:     "lvms-system/lvmcluster is applied (not a dry-run)",
		},
		{name: "the plan of another LVMCluster", existing: planned(func(lc *lvmv1alpha1.LVMCluster) {
			lc.Name = "other"
		}), want: "lvms-system/other is the dry-run plan of another LVMCluster: delete it first " +
			"(kubectl delete lvmcluster other -n lvms-system"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &planRecorder{stages: []lvmv1alpha1.LVMClusterStatus{plannedStatus()}}
			c := newPlanClient(t, rec, tc.existing)
			var out bytes.Buffer
			err := RunPlan(context.Background(), c, planOptions(OutputTable), &out)
			if len(rec.writes) > 0 {
				t.Errorf("plan wrote: %v", rec.writes)
			}
			if tc.want == "" {
				if err != nil || !strings.Contains(out.String(), "node-0   vg1     wipe /dev/vdc") {
					t.Fatalf("plan = %v, output:\n%s", err, out.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrLVMClusterExists) {
				t.Fatalf("error = %v, want ErrLVMClusterExists saying %q", err, tc.want)
			}
			if out.Len() > 0 {
				t.Errorf("a refusal wrote a report:\n%s", out.String())
			}
		})
	}
}

// TestPlanTimeout checks that a node that never reports ends the wait with what is known and an
// error naming the node.
func TestPlanTimeout(t *testing.T) {
	rec := &planRecorder{stages: []lvmv1alpha1.LVMClusterStatus{waitingStatus()}}
	opts := planOptions(OutputTable)
	opts.Timeout = 50 * time.Millisecond
	var out bytes.Buffer
	err := RunPlan(context.Background(), newPlanClient(t, rec), opts, &out)
	want := "the plan of LVMCluster lvms-system/my-lvmcluster is not complete (--timeout 50ms): " +
		"still waiting for node node-1 to report device class vg1"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want one containing %q", err, want)
	}
	got := out.String()
	for _, s := range []string{"node-0   vg1     wipe /dev/vdc", "node-1   vg1     waiting for the node agent to report",
		"Still waiting for:\n  node node-1 to report device class vg1\n", "To discard it:"} {
		if !strings.Contains(got, s) {
			t.Errorf("output lacks %q:\n%s", s, got)
		}
	}
	if strings.Contains(got, "To apply") {
		t.Errorf("an incomplete plan says how to apply it:\n%s", got)
	}
}

// TestPlanReportWaiting checks what the report waits for besides the nodes.
func TestPlanReportWaiting(t *testing.T) {
	lc := &lvmv1alpha1.LVMCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Generation: 2}}
	lc.Spec = readTestPlanFile(t).Spec
	lc.Status = waitingStatus()
	lc.Status.ObservedGeneration = 1
	lc.Status.DeviceClassStatuses = lc.Status.DeviceClassStatuses[:1]
	lc.Status.Conditions = []metav1.Condition{{Type: lvmv1alpha1.ConditionResourcesAvailable,
		Status: metav1.ConditionFalse, Reason: "ApplyFailed", Message: "daemonset: forbidden"}}
	want := []string{
		"the operator to observe generation 2 (status.observedGeneration is 1)",
		"node node-1 to report device class vg1",
		"the operator to report device class fast",
		"the operator's condition ResourcesAvailable, False: ApplyFailed: daemonset: forbidden",
	}
	if got := buildPlanReport(lc).Waiting; !reflect.DeepEqual(got, want) {
		t.Errorf("waiting = %q\nwant      %q", got, want)
	}
}

// TestDisksNotUsed checks that a disk that one device class of a node would take, or wipe and take,
// is not listed although the node's other device classes exclude it.
func TestDisksNotUsed(t *testing.T) {
	notSelected := "is not in the device selector"
	ex := func(name string, reasons ...string) lvmv1alpha1.ExcludedDevice {
		return lvmv1alpha1.ExcludedDevice{Name: name, Reasons: reasons}
	}
	byNode := map[string][]lvmv1alpha1.VGStatus{
		"node-0": {
			{Name: "thick", Excluded: []lvmv1alpha1.ExcludedDevice{
				ex("/dev/vda", "has children: vda1"), ex("/dev/vdb", notSelected), ex("/dev/vdd", notSelected)}},
			{Name: "thin", Excluded: []lvmv1alpha1.ExcludedDevice{
				ex("/dev/vda", notSelected), ex("/dev/vdc", notSelected),
				ex("/dev/vdd", "has a filesystem signature: ext4", lvmv1alpha1.ExcludedWillBeWiped)}},
		},
		"node-1": {{Name: "thin", Devices: []string{"/dev/vdb"}, Excluded: []lvmv1alpha1.ExcludedDevice{
			ex("/dev/vdc", "is read-only")}}},
	}
	want := []Disk{
		{Node: "node-0", Device: "/dev/vda", ExcludedBy: []string{"thick", "thin"},
			Reasons: []string{"has children: vda1", notSelected}},
		{Node: "node-1", Device: "/dev/vdc", ExcludedBy: []string{"thin"}, Reasons: []string{"is read-only"}},
	}
	if got := disksNotUsed(byNode); !reflect.DeepEqual(got, want) {
		t.Errorf("disksNotUsed = %+v\nwant %+v", got, want)
	}
}

// TestPlanInput checks the file plan reads: one LVMCluster, YAML or JSON, from a file or stdin.
func TestPlanInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	head := "apiVersion: lvm.topolvm.io/v1alpha1\nkind: LVMCluster\n"
	cases := []struct{ name, file, want string }{
		{name: "no file", want: "plan needs the LVMCluster to preview: -f FILE"},
		{name: "missing file", file: filepath.Join(dir, "nope.yaml"), want: "read " + filepath.Join(dir, "nope.yaml")},
		{name: "two objects", file: write("two.yaml", head+"metadata: {name: a}\n---\n"+head+"metadata: {name: b}\n"),
			want: "two.yaml: holds 2 objects: plan takes one LVMCluster"},
		{name: "another kind", file: write("sc.yaml", "apiVersion: storage.k8s.io/v1\nkind: StorageClass\n"),
			want: `sc.yaml: holds kind "StorageClass" of apiVersion "storage.k8s.io/v1": plan takes one LVMCluster`},
		{name: "a typo", file: write("typo.yaml", head+"metadata: {name: a}\nspec: {storage: {deviceClasess: []}}\n"),
			want: `typo.yaml: decode LVMCluster: json: unknown field "deviceClasess"`},
		{name: "no name", file: write("noname.yaml", head+"spec: {}\n"), want: "has no metadata.name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &planRecorder{}
			opts := planOptions(OutputTable)
			opts.File = tc.file
			err := RunPlan(context.Background(), newPlanClient(t, rec), opts, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			if len(rec.writes) > 0 {
				t.Errorf("plan wrote: %v", rec.writes)
			}
		})
	}
	t.Run("JSON on stdin, in the file's namespace", func(t *testing.T) {
		rec := &planRecorder{stages: []lvmv1alpha1.LVMClusterStatus{{}}}
		c := newPlanClient(t, rec)
		opts := planOptions(OutputTable)
		opts.File, opts.Timeout = "-", 20*time.Millisecond
		opts.Stdin = strings.NewReader(`{"apiVersion": "lvm.topolvm.io/v1alpha1", "kind": "LVMCluster",
			"metadata": {"name": "j", "namespace": "storage"}, "spec": {"storage": {"deviceClasses": [{"name": "vg1"}]}}}`)
		err := RunPlan(context.Background(), c, opts, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "still waiting for the operator to report device class vg1") {
			t.Fatalf("error = %v, want the timeout waiting for the operator", err)
		}
		var lc lvmv1alpha1.LVMCluster
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "storage", Name: "j"}, &lc); err != nil {
			t.Fatalf("the LVMCluster is not in the file's namespace: %v", err)
		}
	})
}

func readTestPlanFile(t *testing.T) *lvmv1alpha1.LVMCluster {
	t.Helper()
	lc, err := readPlanFile(PlanOptions{File: planFile})
	if err != nil {
		t.Fatal(err)
	}
	return lc
}

// compareTestGolden compares got with testdata/<name>.golden; go test -update rewrites it.
func compareTestGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden file (go test -update writes it): %v", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\n--- got:\n%s\n--- want:\n%s", golden, got, want)
	}
}
