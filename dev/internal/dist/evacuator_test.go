package dist

import (
	"bytes"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lvm-operator/lvm-operator/dev/internal/rbacdoc"
)

// evacuatorName names the evacuator's Deployment, ServiceAccount and ClusterRole.
const evacuatorName = "lvms-evacuator"

// TestEvacuatorComponent checks what config/components/evacuator adds to the install: one
// Deployment lvms-evacuator in the operator namespace running `lvms evacuator` from the operator's
// image (the tag or digest config/default pins), as its own ServiceAccount, confined as the other
// Deployments (non-root, RuntimeDefault seccomp, no capabilities, read-only root) and probed on
// 8081. The component changes no object of the install and adds no Service (the evacuator serves
// no metrics).
func TestEvacuatorComponent(t *testing.T) {
	inst := renderComponent(t, "evacuator")
	base, err := Render(filepath.Join("..", "..", "..", "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]*unstructured.Unstructured{}
	for _, o := range inst.Objects {
		objs[objectKey(o)] = o
	}
	for _, b := range base.Objects {
		if o := objs[objectKey(b)]; o == nil || !reflect.DeepEqual(o.Object, b.Object) {
			t.Errorf("the component changes or removes %s", objectKey(b))
		}
	}
	for _, o := range inst.Objects {
		if o.GetKind() == "Service" && strings.HasPrefix(o.GetName(), evacuatorName) {
			t.Errorf("the component adds Service %s; the evacuator serves no metrics", o.GetName())
		}
	}

	d := typed[appsv1.Deployment](t, inst, "Deployment", evacuatorName)
	op := typed[appsv1.Deployment](t, inst, "Deployment", "lvms-operator")
	pod := d.Spec.Template.Spec
	c := container(t, pod, evacuatorContainer)
	opImage := container(t, op.Spec.Template.Spec, operatorContainer).Image
	if d.Namespace != inst.Namespace || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 ||
		pod.ServiceAccountName != evacuatorName {
		t.Errorf("Deployment %s/%s: replicas %v, service account %q; want one replica in %s as %s",
			d.Namespace, d.Name, d.Spec.Replicas, pod.ServiceAccountName, inst.Namespace, evacuatorName)
	}
	if !slices.Equal(c.Args, []string{"evacuator"}) || c.Image != opImage {
		t.Errorf("evacuator runs %s %q, want the operator's image %s with args [evacuator]", c.Image, c.Args, opImage)
	}
	sa := typed[corev1.ServiceAccount](t, inst, "ServiceAccount", evacuatorName)
	if sa.Namespace != inst.Namespace {
		t.Errorf("ServiceAccount %s in namespace %q, want %q", evacuatorName, sa.Namespace, inst.Namespace)
	}
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil ||
		psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v, want runAsNonRoot and the RuntimeDefault seccomp profile", psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container securityContext %+v, want a read-only root file system", sc)
	}
	for _, p := range []struct {
		what  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path ||
			probePort(c, p.probe.HTTPGet.Port.String()) != 8081 {
			t.Errorf("%s probe %+v, want GET %s on port 8081", p.what, p.probe, p.path)
		}
	}
}

// probePort resolves a probe's port (a number or a port name of c).
func probePort(c corev1.Container, port string) int32 {
	for _, p := range c.Ports {
		if p.Name == port {
			return p.ContainerPort
		}
	}
	var n int32
	for _, r := range port {
		if r < '0' || r > '9' {
			return 0
		}
		n = n*10 + r - '0'
	}
	return n
}

// TestEvacuatorRBAC reads the RBAC of the install with the component: what the evacuator may do
// for each step of a move, and what it may not (delete pods, volumes or nodes, read Secrets, take
// leases outside its namespace).
func TestEvacuatorRBAC(t *testing.T) {
	inst := renderComponent(t, "evacuator")
	set := rbacSet(t, inst)
	ns := inst.Namespace
	core := func(verb, resource, namespace string) rbacdoc.Attributes {
		return rbacdoc.Attributes{Verb: verb, Resource: resource, Namespace: namespace}
	}
	lv := func(verb string) rbacdoc.Attributes {
		return rbacdoc.Attributes{Verb: verb, Group: "topolvm.io", Resource: "logicalvolumes"}
	}
	lease := func(verb, namespace string) rbacdoc.Attributes {
		return rbacdoc.Attributes{Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Namespace: namespace}
	}
	tests := []struct {
		attrs   rbacdoc.Attributes
		allowed bool
	}{
		{core("watch", "nodes", ""), true},
		{core("patch", "nodes", ""), true},
		{core("update", "nodes", ""), false},
		{core("delete", "nodes", ""), false},
		{core("list", "pods", ""), true},
		{core("create", "pods/eviction", "apps"), true},
		{core("delete", "pods", "apps"), false},
		{core("create", "persistentvolumeclaims", "apps"), true},
		{core("delete", "persistentvolumeclaims", "apps"), true},
		{core("update", "persistentvolumeclaims", "apps"), false},
		{core("create", "persistentvolumes", ""), true},
		{core("patch", "persistentvolumes", ""), true},
		{core("delete", "persistentvolumes", ""), false},
		{lv("create"), true},
		{lv("delete"), true},
		{lv("update"), false},
		{core("create", "events", "apps"), true},
		{rbacdoc.Attributes{Verb: "patch", Group: "events.k8s.io", Resource: "events", Namespace: "apps"}, true},
		{core("get", "secrets", ns), false},
		{core("list", "secrets", ""), false},
		{lease("update", ns), true},
		{lease("create", "kube-system"), false},
	}
	for _, tt := range tests {
		a := tt.attrs
		t.Run(a.Verb+" "+a.Group+"/"+a.Resource+" "+a.Namespace, func(t *testing.T) {
			if got := rbacdoc.Allows(set.Grants(ns, evacuatorName), a); got != tt.allowed {
				t.Errorf("allowed %v, want %v", got, tt.allowed)
			}
		})
	}
}

// TestChartEvacuator: the chart has the evacuator behind evacuator.enabled, off by default, with
// the release's image; no other template names it.
func TestChartEvacuator(t *testing.T) {
	files := repoFiles(t)
	if !bytes.Contains(files[ChartDir+"/values.yaml"], []byte("\nevacuator:\n  enabled: false\n")) {
		t.Errorf("values.yaml has no evacuator.enabled: false:\n%s", files[ChartDir+"/values.yaml"])
	}
	tpl := files[ChartDir+"/templates/evacuator.yaml"]
	if !bytes.HasPrefix(tpl, []byte(generatedHeader+"{{- if .Values.evacuator.enabled }}\n")) ||
		!bytes.HasSuffix(tpl, []byte("{{- end }}\n")) {
		t.Errorf("templates/evacuator.yaml is not behind .Values.evacuator.enabled:\n%s", tpl)
	}
	for _, want := range []string{"kind: Deployment", "name: " + evacuatorName, "image: '" + tplImage + "'"} {
		if !bytes.Contains(tpl, []byte(want)) {
			t.Errorf("templates/evacuator.yaml lacks %q", want)
		}
	}
	for name, b := range files {
		if strings.HasPrefix(name, ChartDir+"/templates/") && name != ChartDir+"/templates/evacuator.yaml" &&
			bytes.Contains(b, []byte(evacuatorName)) {
			t.Errorf("%s names %s; only templates/evacuator.yaml may", name, evacuatorName)
		}
	}
}

// TestBundleLeavesOutTheEvacuator: the OLM bundle runs the operator's Deployment alone and grants
// the evacuator's service account nothing (OLM would run its Deployment on every install).
func TestBundleLeavesOutTheEvacuator(t *testing.T) {
	files := repoFiles(t)
	bundle, errs := validateBundle(t, files)
	for _, e := range errs {
		t.Errorf("%v", e)
	}
	spec := bundle.CSV.Spec.InstallStrategy.StrategySpec
	var deployments []string
	for _, d := range spec.DeploymentSpecs {
		deployments = append(deployments, d.Name)
	}
	if !slices.Equal(deployments, []string{"lvms-operator"}) {
		t.Errorf("CSV deployments %q, want only lvms-operator", deployments)
	}
	for _, p := range slices.Concat(spec.Permissions, spec.ClusterPermissions) {
		if p.ServiceAccountName == evacuatorName {
			t.Errorf("the CSV grants %s %+v", evacuatorName, p.Rules)
		}
	}
	for name, b := range files {
		if strings.HasPrefix(name, BundleDir+"/") && bytes.Contains(b, []byte(evacuatorName)) {
			t.Errorf("%s names %s", name, evacuatorName)
		}
	}
}
