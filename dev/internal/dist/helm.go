package dist

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ChartDir is where the Helm chart is written, relative to the repository root.
const ChartDir = "charts/lvms"

// Template expressions that stand in the chart for values of the rendered install.
const (
	tplNamespace = "{{ .Release.Namespace }}"
	tplImage     = `{{ include "lvms.image" . }}`
	tplPolicy    = "{{ .Values.image.pullPolicy }}"
	// tplProfiling is the value of the operator's profilingEnv: "true" or "false".
	tplProfiling = "{{ .Values.profiling.enabled }}"
)

// profilingEnv is the operator's environment variable that turns on its and the node agents'
// --profiling (cmd/lvms); the chart sets it from the value profiling.enabled.
const profilingEnv = "LVMS_PROFILING"

// sidecarValues maps the container names of the CSI sidecars to their key under .Values.sidecars.
var sidecarValues = map[string]string{
	"csi-provisioner": "provisioner",
	"csi-resizer":     "resizer",
	"csi-snapshotter": "snapshotter",
}

// imageRef is an image reference split into repository, tag and digest.
type imageRef struct{ repository, tag, digest string }

func parseImage(ref string) imageRef {
	var r imageRef
	if name, digest, ok := strings.Cut(ref, "@"); ok {
		ref, r.digest = name, digest
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref, r.tag = ref[:i], ref[i+1:]
	}
	r.repository = ref
	return r
}

// chartFiles renders the Helm chart: the CRDs under crds/ (Helm installs them first and never
// templates them), every other object of the install under templates/ with the namespace, the
// images and the pull policy turned into values. The Namespace object is left to Helm
// (`--create-namespace`).
func chartFiles(inst *Install, o Options) (map[string][]byte, error) {
	files := map[string][]byte{}
	deploy, err := inst.one("Deployment")
	if err != nil {
		return nil, err
	}
	components := o.components()
	v, err := renderVariants(inst, o.ConfigDir, components)
	if err != nil {
		return nil, err
	}
	values, err := chartValues(deploy, components)
	if err != nil {
		return nil, err
	}
	for i, c := range components {
		tpl, err := addedTemplate(c, v.added(i), inst.Namespace)
		if err != nil {
			return nil, err
		}
		files[ChartDir+"/templates/"+c.Template] = []byte(tpl)
	}
	for _, obj := range inst.Objects {
		switch obj.GetKind() {
		case "Namespace":
			continue
		case "CustomResourceDefinition":
			name, err := crdFileName(obj)
			if err != nil {
				return nil, err
			}
			b, err := toYAML(obj.Object)
			if err != nil {
				return nil, err
			}
			files[ChartDir+"/crds/"+name] = b
			continue
		}
		text, err := v.template(objectKey(obj), inst.Namespace)
		if err != nil {
			return nil, err
		}
		files[ChartDir+"/templates/"+fileName(obj)] = []byte(generatedHeader + text)
	}
	files[ChartDir+"/Chart.yaml"] = []byte(chartYAML(o.Version))
	files[ChartDir+"/values.yaml"] = []byte(values)
	files[ChartDir+"/templates/_helpers.tpl"] = []byte(helpersTpl)
	files[ChartDir+"/templates/NOTES.txt"] = []byte(notesTxt)
	return files, nil
}

// templatize replaces, in place, the install namespace, the operator image, its pull policy, the
// sidecar images and the value of profilingEnv with template expressions.
func templatize(obj map[string]any, namespace string) {
	var walk func(v any, key string) any
	walk = func(v any, key string) any {
		switch t := v.(type) {
		case map[string]any:
			if name, ok := t["name"].(string); ok && t["image"] != nil {
				templatizeContainer(t, name)
			}
			if t["name"] == profilingEnv && t["value"] != nil {
				t["value"] = tplProfiling
			}
			for k, child := range t {
				t[k] = walk(child, k)
			}
		case []any:
			for i, child := range t {
				t[i] = walk(child, key)
			}
		case string:
			// "values": a namespace selector's (kubernetes.io/metadata.name In/NotIn [namespace]).
			if t == namespace && (key == "namespace" || key == "values") {
				return tplNamespace
			}
		}
		return v
	}
	walk(obj, "")
}

func templatizeContainer(c map[string]any, name string) {
	if name == operatorContainer || name == extenderContainer || name == evacuatorContainer {
		c["image"] = tplImage
		c["imagePullPolicy"] = tplPolicy
		return
	}
	if key, ok := sidecarValues[name]; ok {
		c["image"] = "{{ .Values.sidecars." + key + " }}"
	}
}

// containerImages maps the container names of the Deployments among objs to their images.
func containerImages(objs []*unstructured.Unstructured) (map[string]string, error) {
	images := map[string]string{}
	for _, d := range objs {
		if d.GetKind() != "Deployment" {
			continue
		}
		containers, _, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		if err != nil {
			return nil, fmt.Errorf("deployment %s: containers: %w", d.GetName(), err)
		}
		for _, c := range containers {
			m, _ := c.(map[string]any)
			name, _ := m["name"].(string)
			image, _ := m["image"].(string)
			images[name] = image
		}
	}
	return images, nil
}

// chartValues is values.yaml: the defaults are the images of the operator's Deployment. The
// components run no image of their own (the extender and the evacuator run the lvms image; the
// snapshot metadata sidecar's Deployment is the operator's), so they add only their <Value>.enabled.
func chartValues(deploy *unstructured.Unstructured, components []Component) (string, error) {
	images, err := containerImages([]*unstructured.Unstructured{deploy})
	if err != nil {
		return "", err
	}
	op, ok := images[operatorContainer]
	if !ok {
		return "", fmt.Errorf("deployment %s has no container %q", deploy.GetName(), operatorContainer)
	}
	ref := parseImage(op)
	var b strings.Builder
	b.WriteString(generatedHeader)
	b.WriteString("# The lvms image: the operator and the node agent DaemonSet it creates run it.\n")
	fmt.Fprintf(
		&b,
		"image:\n  repository: %s\n  # A digest, when set, wins over the tag.\n  digest: %q\n  tag: %q\n  pullPolicy: IfNotPresent\n",
		ref.repository,
		ref.digest,
		ref.tag,
	)
	b.WriteString("# The ServiceMonitor and PrometheusRule of config/prometheus; they need the Prometheus Operator.\n" +
		"monitoring:\n  enabled: false\n" +
		"# Go's runtime profiles (pprof) of the operator and the node agents at /debug/pprof/ on their\n" +
		"# metrics endpoints, for clients bound to ClusterRole lvms-profile-reader (docs/performance.md).\n" +
		"profiling:\n  enabled: false\n")
	for _, c := range components {
		for _, line := range c.Doc {
			b.WriteString("# " + line + "\n")
		}
		b.WriteString(c.Value + ":\n  enabled: false\n")
	}
	b.WriteString(
		"# The standard kubernetes-csi sidecars beside the operator.\nsidecars:\n",
	)
	for _, name := range sortedKeys(sidecarValues) {
		img, ok := images[name]
		if !ok {
			return "", fmt.Errorf("deployment %s has no container %q", deploy.GetName(), name)
		}
		fmt.Fprintf(&b, "  %s: %s\n", sidecarValues[name], img)
	}
	return b.String(), nil
}

func chartYAML(version string) string {
	return generatedHeader + `apiVersion: v2
name: lvms
description: LVM storage for Kubernetes - local disks as dynamically provisioned, capacity-aware LVM volumes (TopoLVM and OpenShift LVMS API)
type: application
version: ` + version + `
appVersion: "v` + version + `"
kubeVersion: ">= 1.30.0-0"
keywords: [storage, lvm, csi, topolvm, local-storage]
home: https://github.com/lvm-operator/lvm-operator
sources: [https://github.com/lvm-operator/lvm-operator]
`
}

// generatedHeader marks every generated file.
const generatedHeader = "# Generated by `make dist` from config/ (dev/internal/dist). DO NOT EDIT.\n"

const helpersTpl = `{{/* Generated by ` + "`make dist`" + ` from config/ (dev/internal/dist). DO NOT EDIT. */}}
{{/* The lvms image: repository@digest when a digest is set, else repository:tag (default: v<appVersion>). */}}
{{- define "lvms.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}
`

const notesTxt = `lvms is installed in namespace {{ .Release.Namespace }}.

Create one LVMCluster in that namespace, for example:

  kubectl apply -n {{ .Release.Namespace }} -f - <<EOF
  apiVersion: lvm.topolvm.io/v1alpha1
  kind: LVMCluster
  metadata: {name: my-lvmcluster}
  spec:
    storage:
      deviceClasses:
      - name: vg1
        default: true
        thinPoolConfig: {name: thin-pool-1, sizePercent: 90, overprovisionRatio: 10}
  EOF

then wait for "kubectl get lvmcluster -n {{ .Release.Namespace }}" to show Ready; PVCs on StorageClass
lvms-vg1 get LVM volumes. Uninstall: delete the LVMCluster first (it removes the volume groups),
then "helm uninstall"; the CRDs stay (Helm never deletes CRDs).
`
