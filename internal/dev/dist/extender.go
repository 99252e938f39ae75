package dist

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The scheduler extender in the chart: the kustomize component (Options.ExtenderComponent) rendered
// on top of the install becomes the value schedulerExtender.enabled. Objects only the component
// adds go to one template behind the value; objects it changes (the operator's Deployment gets
// --pod-mutating-webhook, the mutating webhook configuration the pod webhook) are written in both
// forms, chosen by the value. So the chart follows config/ with nothing kept by hand.
const (
	extenderTemplate = ChartDir + "/templates/scheduler-extender.yaml"
	extenderValue    = ".Values.schedulerExtender.enabled"
	// extenderContainer runs `lvms scheduler` from the operator's image.
	extenderContainer = "scheduler"
)

// renderWithComponent renders the install at configDir with the kustomize component at component,
// through an overlay in a temporary directory.
func renderWithComponent(configDir, component string) (*Install, error) {
	dir, err := os.MkdirTemp("", "lvms-dist-")
	if err != nil {
		return nil, fmt.Errorf("overlay directory: %w", err)
	}
	defer os.RemoveAll(dir)
	rel := func(p string) (string, error) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("overlay path %s: %w", p, err)
		}
		return filepath.Rel(dir, abs)
	}
	base, err := rel(configDir)
	if err != nil {
		return nil, err
	}
	comp, err := rel(component)
	if err != nil {
		return nil, err
	}
	body := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + base +
		"\ncomponents:\n- " + comp + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(body), 0o600); err != nil {
		return nil, fmt.Errorf("write overlay: %w", err)
	}
	return Render(dir)
}

// objectKey identifies an object of the install.
func objectKey(o *unstructured.Unstructured) string {
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// extenderDelta splits ext (the install with the component) against inst: the objects only ext has,
// and for each object ext changes, its form in ext by key.
func extenderDelta(inst, ext *Install) (added []*unstructured.Unstructured,
	changed map[string]*unstructured.Unstructured, err error,
) {
	base := map[string]*unstructured.Unstructured{}
	for _, o := range inst.Objects {
		base[objectKey(o)] = o
	}
	changed = map[string]*unstructured.Unstructured{}
	seen := map[string]bool{}
	for _, o := range ext.Objects {
		k := objectKey(o)
		seen[k] = true
		b, ok := base[k]
		switch {
		case !ok:
			added = append(added, o)
		case o.GetKind() == "CustomResourceDefinition" && !reflect.DeepEqual(o.Object, b.Object):
			return nil, nil, fmt.Errorf("the scheduler-extender component changes CRD %s: the chart installs CRDs "+
				"unconditionally", o.GetName())
		case !reflect.DeepEqual(o.Object, b.Object):
			changed[k] = o
		}
	}
	for k := range base {
		if !seen[k] {
			return nil, nil, fmt.Errorf("the scheduler-extender component removes %s", k)
		}
	}
	return added, changed, nil
}

// templateYAML is obj as a chart template body (namespace and images turned into values).
func templateYAML(obj *unstructured.Unstructured, namespace string) (string, error) {
	t := obj.DeepCopy()
	templatize(t.Object, namespace)
	b, err := toYAML(t.Object)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// eitherTemplate is the template of an object the component changes: its form with the component
// when the value is on, else its form without.
func eitherTemplate(with, without string) string {
	return "{{- if " + extenderValue + " }}\n" + ensureDocStart(with) + "{{- else }}\n" + ensureDocStart(without) +
		"{{- end }}\n"
}

// addedTemplate holds the objects only the component adds, behind the value.
func addedTemplate(objs []*unstructured.Unstructured, namespace string) (string, error) {
	var b strings.Builder
	b.WriteString(generatedHeader + "{{- if " + extenderValue + " }}\n")
	for _, o := range objs {
		text, err := templateYAML(o, namespace)
		if err != nil {
			return "", err
		}
		b.WriteString(ensureDocStart(text))
	}
	b.WriteString("{{- end }}\n")
	return b.String(), nil
}

func ensureDocStart(s string) string {
	if !strings.HasPrefix(s, "---\n") {
		return "---\n" + s
	}
	return s
}
