package dist

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lvm-operator/lvm-operator/internal/dev/rbacdoc"
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

// renderSnapshotMetadata renders config/default with the snapshot-metadata component.
func renderSnapshotMetadata(t *testing.T) *Install {
	t.Helper()
	root := filepath.Join("..", "..", "..")
	inst, err := renderWithComponents(filepath.Join(root, "config", "default"),
		[]string{filepath.Join(root, "config", "components", "snapshot-metadata")})
	if err != nil {
		t.Fatal(err)
	}
	return inst
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

// TestSnapshotMetadataComponent checks that the component deploys what the code expects: the
// operator runs with --snapshot-metadata, the proxy runs `lvms snapshot-metadata` from the
// operator's pinned image with the certificates the operator issues, the sidecar talks to it over
// the shared socket and serves TLS behind the Service port of the SnapshotMetadataService address.
func TestSnapshotMetadataComponent(t *testing.T) {
	inst := renderSnapshotMetadata(t)
	op := typed[appsv1.Deployment](t, inst, "Deployment", "lvms-operator")
	opc := container(t, op.Spec.Template.Spec, operatorContainer)
	if !slices.Contains(opc.Args, "--snapshot-metadata") {
		t.Errorf("operator args %q lack --snapshot-metadata", opc.Args)
	}
	d := typed[appsv1.Deployment](t, inst, "Deployment", "lvms-snapshot-metadata")
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != "lvms-snapshot-metadata" || pod.SecurityContext == nil ||
		pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("pod service account %q, security context %+v", pod.ServiceAccountName, pod.SecurityContext)
	}
	proxy := container(t, pod, "proxy")
	if proxy.Image != opc.Image {
		t.Errorf("proxy image %q, want the operator's pinned %q", proxy.Image, opc.Image)
	}
	wantArgs := []string{"snapshot-metadata", "--csi-address=/csi/csi.sock", "--cert-dir=/certs/node-client",
		"--namespace=$(POD_NAMESPACE)", "--node-port=9820"}
	if !slices.Equal(proxy.Args, wantArgs) {
		t.Errorf("proxy args %q, want %q", proxy.Args, wantArgs)
	}
	if len(proxy.Env) != 1 || proxy.Env[0].Name != "POD_NAMESPACE" || proxy.Env[0].ValueFrom == nil ||
		proxy.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("proxy env %+v, want POD_NAMESPACE from metadata.namespace", proxy.Env)
	}
	sidecar := container(t, pod, "csi-snapshot-metadata")
	if sidecar.Image != "registry.k8s.io/sig-storage/csi-snapshot-metadata:v0.2.0" {
		t.Errorf("sidecar image %q", sidecar.Image)
	}
	for _, want := range []string{"--csi-address=/csi/csi.sock", "--tls-cert=/certs/server/tls.crt",
		"--tls-key=/certs/server/tls.key"} {
		if !slices.Contains(sidecar.Args, want) {
			t.Errorf("sidecar args %q lack %s", sidecar.Args, want)
		}
	}
	mounts := map[string]string{}
	for _, c := range []corev1.Container{proxy, sidecar} {
		for _, m := range c.VolumeMounts {
			mounts[c.Name+" "+m.MountPath] = m.Name
		}
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	if mounts["proxy /csi"] == "" || mounts["proxy /csi"] != mounts["csi-snapshot-metadata /csi"] ||
		volumes[mounts["proxy /csi"]].EmptyDir == nil {
		t.Errorf("proxy and sidecar do not share an emptyDir at /csi: mounts %v", mounts)
	}
	// Secret key -> file in the proxy's certificate directory; no source optional.
	certs := map[string]string{}
	if p := volumes[mounts["proxy /certs/node-client"]].Projected; p != nil {
		for _, s := range p.Sources {
			if s.Secret == nil || s.Secret.Optional != nil && *s.Secret.Optional {
				t.Errorf("projected source %+v: want a Secret that is not optional", s)
				continue
			}
			for _, it := range s.Secret.Items {
				certs[it.Path] = s.Secret.Name + "/" + it.Key
			}
		}
	}
	wantCerts := map[string]string{"tls.crt": "lvms-snapshot-metadata-client-cert/tls.crt",
		"tls.key": "lvms-snapshot-metadata-client-cert/tls.key", "ca.crt": "lvms-snapshot-metadata-node-cert/ca.crt"}
	if len(certs) != len(wantCerts) {
		t.Errorf("proxy certificate files %v, want %v", certs, wantCerts)
	}
	for path, src := range wantCerts {
		if certs[path] != src {
			t.Errorf("proxy certificate file %s from %q, want %q", path, certs[path], src)
		}
	}
	server := volumes[mounts["csi-snapshot-metadata /certs/server"]].Secret
	if server == nil || server.SecretName != "lvms-snapshot-metadata-server-cert" ||
		server.Optional != nil && *server.Optional {
		t.Errorf("sidecar certificate volume %+v, want Secret lvms-snapshot-metadata-server-cert, not optional", server)
	}
	svc := typed[corev1.Service](t, inst, "Service", "lvms-snapshot-metadata")
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 6443 ||
		svc.Spec.Ports[0].TargetPort.String() != "grpc" ||
		len(sidecar.Ports) != 1 || sidecar.Ports[0].Name != "grpc" || sidecar.Ports[0].ContainerPort != 6443 {
		t.Errorf("service ports %+v, sidecar ports %+v: want 6443 -> grpc (6443)", svc.Spec.Ports, sidecar.Ports)
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf(
				"service selector %v does not select the pod (labels %v)",
				svc.Spec.Selector,
				d.Spec.Template.Labels,
			)
		}
	}
}

// TestSnapshotMetadataRBAC reads the RBAC of the install with the component: what each service
// account may and may not do for the snapshot metadata service.
func TestSnapshotMetadataRBAC(t *testing.T) {
	inst := renderSnapshotMetadata(t)
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
