package dist

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lvm-operator/lvm-operator/dev/internal/rbacdoc"
	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
)

// obj is a test object: a ConfigMap named name whose data key v is value (or another kind).
func obj(kind, name, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "lvms-system"},
		"data":     map[string]any{"v": value},
	}}
}

// testVariants builds variants of two components from the installs by mask (0: none, 1: a, 2: b,
// 3: both).
func testVariants(installs ...[]*unstructured.Unstructured) *variants {
	v := &variants{components: []Component{{Value: "a"}, {Value: "b"}}}
	for _, objs := range installs {
		m := map[string]*unstructured.Unstructured{}
		for _, o := range objs {
			m[objectKey(o)] = o
		}
		v.installs = append(v.installs, m)
		v.ordered = append(v.ordered, objs)
	}
	return v
}

func TestVariantsTemplate(t *testing.T) {
	plain := func(value string) string {
		text, err := templateYAML(obj("ConfigMap", "x", value), "lvms-system")
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	ifA, ifB := "{{- if .Values.a.enabled }}\n", "{{- if .Values.b.enabled }}\n"
	els, end := "{{- else }}\n", "{{- end }}\n"
	tests := []struct {
		name   string
		values [4]string // the ConfigMap's value with none, a, b, both
		want   string
	}{
		{"unchanged", [4]string{"0", "0", "0", "0"}, plain("0")},
		{"changed by a", [4]string{"0", "1", "0", "1"}, ifA + plain("1") + els + plain("0") + end},
		{"changed by b", [4]string{"0", "0", "2", "2"}, ifB + plain("2") + els + plain("0") + end},
		{
			"changed by both", [4]string{"0", "1", "2", "12"},
			ifA + ifB + plain("12") + els + plain("1") + end + els + ifB + plain("2") + els + plain("0") + end + end,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var installs [][]*unstructured.Unstructured
			for _, value := range tt.values {
				installs = append(installs, []*unstructured.Unstructured{obj("ConfigMap", "x", value)})
			}
			v := testVariants(installs...)
			if err := v.check(); err != nil {
				t.Fatal(err)
			}
			got, err := v.template("ConfigMap/lvms-system/x", "lvms-system")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("template:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestVariantsCheck(t *testing.T) {
	base := obj("ConfigMap", "base", "0")
	crd := obj("CustomResourceDefinition", "crd", "0")
	tests := []struct {
		name     string
		installs [4][]*unstructured.Unstructured
		want     string // part of the error; "" for none
	}{
		{
			name: "each component adds its own object",
			installs: [4][]*unstructured.Unstructured{{base}, {base, obj("ConfigMap", "a", "")},
				{base, obj("ConfigMap", "b", "")}, {base, obj("ConfigMap", "a", ""), obj("ConfigMap", "b", "")}},
		},
		{
			name:     "a component removes an object",
			installs: [4][]*unstructured.Unstructured{{base}, {}, {base}, {}},
			want:     "the components a remove ConfigMap/lvms-system/base",
		},
		{
			name: "a component changes a CRD",
			installs: [4][]*unstructured.Unstructured{
				{crd},
				{crd},
				{obj("CustomResourceDefinition", "crd", "1")},
				{crd},
			},
			want: "the components b change CRD crd",
		},
		{
			name: "both add one object",
			installs: [4][]*unstructured.Unstructured{{base}, {base, obj("ConfigMap", "s", "")},
				{base, obj("ConfigMap", "s", "")}, {base, obj("ConfigMap", "s", "")}},
			want: "ConfigMap/lvms-system/s is added by both a and b",
		},
		{
			name: "one changes what the other adds",
			installs: [4][]*unstructured.Unstructured{{base}, {base, obj("ConfigMap", "a", "")}, {base},
				{base, obj("ConfigMap", "a", "changed")}},
			want: "ConfigMap/lvms-system/a, which a adds, is changed by a+b",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := testVariants(tt.installs[:]...).check()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("check: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("check: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// renderComponent renders config/default with the component config/components/<name>.
func renderComponent(t *testing.T, name string) *Install {
	t.Helper()
	root := filepath.Join("..", "..", "..")
	inst, err := renderWithComponents(filepath.Join(root, "config", "default"),
		[]string{filepath.Join(root, "config", "components", name)})
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// renderSnapshotMetadata renders config/default with the snapshot-metadata component.
func renderSnapshotMetadata(t *testing.T) *Install {
	t.Helper()
	return renderComponent(t, "snapshot-metadata")
}

// rbacSet reads the RBAC objects and service accounts of inst.
func rbacSet(t *testing.T, inst *Install) *rbacdoc.Set {
	t.Helper()
	var rbac []any
	for _, o := range inst.Objects {
		switch o.GetKind() {
		case "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding", "ServiceAccount":
			rbac = append(rbac, o.Object)
		}
	}
	stream, err := toYAML(rbac...)
	if err != nil {
		t.Fatal(err)
	}
	set, err := rbacdoc.Decode(stream, inst.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// typed converts the single object of kind and name in inst to T.
func typed[T any](t *testing.T, inst *Install, kind, name string) *T {
	t.Helper()
	for _, o := range inst.find(kind) {
		if o.GetName() == name {
			var v T
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &v); err != nil {
				t.Fatal(err)
			}
			return &v
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}

func container(t *testing.T, pod corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	i := slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no container %q", name)
	}
	return pod.Containers[i]
}

// TestSnapshotMetadataComponent checks what the component adds to the install: the operator runs
// with --snapshot-metadata, and the install brings what the operator's Deployment
// lvms-snapshot-metadata needs but does not create: its ServiceAccount in the operator namespace
// and the Service of the SnapshotMetadataService address (6443 to the sidecar's port "grpc",
// selecting the Deployment's pods by their app.kubernetes.io/name). The Deployment and its
// certificate Secrets are the operator's, so the install has none of them.
func TestSnapshotMetadataComponent(t *testing.T) {
	inst := renderSnapshotMetadata(t)
	op := typed[appsv1.Deployment](t, inst, "Deployment", "lvms-operator")
	opc := container(t, op.Spec.Template.Spec, operatorContainer)
	if !slices.Contains(opc.Args, snapshotMetadataFlag) {
		t.Errorf("operator args %q lack %s", opc.Args, snapshotMetadataFlag)
	}
	const name = lvmcluster.SnapshotMetadataName
	for _, o := range inst.Objects {
		if o.GetKind() == "Deployment" && o.GetName() == name ||
			o.GetKind() == "Secret" && strings.HasPrefix(o.GetName(), name+"-") {
			t.Errorf("the install has %s %s; the operator creates it", o.GetKind(), o.GetName())
		}
	}
	sa := typed[corev1.ServiceAccount](t, inst, "ServiceAccount", name)
	if sa.Namespace != inst.Namespace {
		t.Errorf("ServiceAccount %s in namespace %q, want the operator's %q", name, sa.Namespace, inst.Namespace)
	}
	svc := typed[corev1.Service](t, inst, "Service", name)
	if svc.Namespace != inst.Namespace {
		t.Errorf("Service %s in namespace %q, want the operator's %q", name, svc.Namespace, inst.Namespace)
	}
	ports := svc.Spec.Ports
	if len(ports) != 1 || ports[0].Port != lvmcluster.SnapshotMetadataPort ||
		ports[0].TargetPort != intstr.FromString("grpc") {
		t.Errorf("service ports %+v, want one: %d -> grpc", ports, lvmcluster.SnapshotMetadataPort)
	}
	want := map[string]string{"app.kubernetes.io/name": name}
	if !maps.Equal(svc.Spec.Selector, want) {
		t.Errorf("service selector %v, want %v (the labels of the operator's Deployment %s)",
			svc.Spec.Selector, want, name)
	}
}

// TestSnapshotMetadataRBAC reads the RBAC of the install with the component: what each service
// account may and may not do for the snapshot metadata service.
func TestSnapshotMetadataRBAC(t *testing.T) {
	set := rbacSet(t, renderSnapshotMetadata(t))
	const ns = "lvms-system"
	sms := func(verb string) rbacdoc.Attributes {
		return rbacdoc.Attributes{Verb: verb, Group: "cbt.storage.k8s.io", Resource: "snapshotmetadataservices"}
	}
	tests := []struct {
		account string
		attrs   rbacdoc.Attributes
		allowed bool
	}{
		{"lvms-operator", sms("create"), true},
		{"lvms-operator", sms("patch"), true},
		{"lvms-operator", sms("watch"), true},
		{"lvms-operator", sms("delete"), false},
		{"lvms-snapshot-metadata", sms("get"), true},
		{"lvms-snapshot-metadata", sms("watch"), true},
		{"lvms-snapshot-metadata", sms("patch"), false},
		{
			"lvms-snapshot-metadata",
			rbacdoc.Attributes{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"},
			true,
		},
		{
			"lvms-snapshot-metadata",
			rbacdoc.Attributes{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
			true,
		},
		{
			"lvms-snapshot-metadata",
			rbacdoc.Attributes{
				Verb:      "get",
				Group:     "snapshot.storage.k8s.io",
				Resource:  "volumesnapshots",
				Namespace: "apps",
			},
			true,
		},
		{
			"lvms-snapshot-metadata",
			rbacdoc.Attributes{Verb: "list", Group: "snapshot.storage.k8s.io", Resource: "volumesnapshotcontents"},
			true,
		},
		{
			"lvms-snapshot-metadata",
			rbacdoc.Attributes{
				Verb:      "update",
				Group:     "snapshot.storage.k8s.io",
				Resource:  "volumesnapshots",
				Namespace: "apps",
			},
			false,
		},
		{
			"lvms-snapshot-metadata",
			rbacdoc.Attributes{Verb: "watch", Group: "topolvm.io", Resource: "logicalvolumes"},
			true,
		},
		{
			"lvms-snapshot-metadata",
			rbacdoc.Attributes{Verb: "update", Group: "topolvm.io", Resource: "logicalvolumes"},
			false,
		},
		{"lvms-snapshot-metadata", rbacdoc.Attributes{Verb: "list", Resource: "pods", Namespace: ns}, true},
		{"lvms-snapshot-metadata", rbacdoc.Attributes{Verb: "list", Resource: "pods", Namespace: "apps"}, false},
		{"lvms-snapshot-metadata", rbacdoc.Attributes{Verb: "get", Resource: "secrets", Namespace: ns}, false},
	}
	for _, tt := range tests {
		a := tt.attrs
		t.Run(tt.account+" "+a.Verb+" "+a.Resource+" "+a.Namespace, func(t *testing.T) {
			if got := rbacdoc.Allows(set.Grants(ns, tt.account), a); got != tt.allowed {
				t.Errorf("allowed %v, want %v", got, tt.allowed)
			}
		})
	}
}

// TestProfilingComponent: the install sets the operator's LVMS_PROFILING to "false", and
// config/components/profiling turns it to "true" (the chart's profiling.enabled does the same;
// hack/check-dist.sh renders it).
func TestProfilingComponent(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	base, err := Render(filepath.Join(root, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	on, err := renderWithComponents(filepath.Join(root, "config", "default"),
		[]string{filepath.Join(root, "config", "components", "profiling")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		inst *Install
		want string
	}{{base, "false"}, {on, "true"}} {
		op := typed[appsv1.Deployment](t, tt.inst, "Deployment", "lvms-operator")
		var got []string
		for _, e := range container(t, op.Spec.Template.Spec, operatorContainer).Env {
			if e.Name == profilingEnv {
				got = append(got, e.Value)
			}
		}
		if !slices.Equal(got, []string{tt.want}) {
			t.Errorf("operator env %s = %q, want [%q]", profilingEnv, got, tt.want)
		}
	}
}

// TestEveryContainerIsConfined renders config/default with every component and checks each
// container of the install (Deployments and DaemonSets, init containers too) for a securityContext
// that forbids privilege escalation and drops every capability, and for CPU and memory requests.
func TestEveryContainerIsConfined(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	var comps []string
	for _, c := range []string{"scheduler-extender", "snapshot-metadata", "evacuator", "profiling"} {
		comps = append(comps, filepath.Join(root, "config", "components", c))
	}
	inst, err := renderWithComponents(filepath.Join(root, "config", "default"), comps)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, kind := range []string{"Deployment", "DaemonSet"} {
		for _, o := range inst.find(kind) {
			var spec corev1.PodSpec
			raw, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
				t.Fatal(err)
			}
			for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
				seen++
				where := kind + " " + o.GetName() + " container " + c.Name
				sc := c.SecurityContext
				if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
					sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
					t.Errorf("%s: securityContext %+v, want allowPrivilegeEscalation false and capabilities drop ALL",
						where, sc)
				}
				if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
					t.Errorf("%s: requests %v, want cpu and memory", where, c.Resources.Requests)
				}
			}
		}
	}
	// The operator, its three CSI sidecars, the extender and the evacuator (the operator makes the
	// node agents and the snapshot metadata service itself: internal/controller/lvmcluster).
	if seen < 6 {
		t.Fatalf("checked %d containers, want at least 6", seen)
	}
}
