package dist

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The optional kustomize components in the chart (config/components: the scheduler extender, the
// snapshot metadata service, the evacuator): each becomes a value <Value>.enabled. The install is
// rendered with every subset of the components on top. Objects only a component adds go to one
// template of its own behind its value; objects the components change (the operator's Deployment
// gets a flag from the extender and the snapshot metadata service) are written in every form they
// take, chosen by the values of the components that change them. So the chart follows config/ with
// nothing kept by hand.

// Component is an optional kustomize component the chart turns on with a value.
type Component struct {
	// Dir is the component's kustomize directory.
	Dir string
	// Value is the chart value's key: <Value>.enabled turns the component on.
	Value string
	// Template is the chart template, under templates/, of the objects only the component adds.
	Template string
	// Doc is the values.yaml comment above the value, one line per element.
	Doc []string
}

// components are the components o names, in the order of their values' nesting.
func (o Options) components() []Component {
	var out []Component
	if o.ExtenderComponent != "" {
		out = append(out, extenderComponent(o.ExtenderComponent))
	}
	if o.SnapshotMetadataComponent != "" {
		out = append(out, snapshotMetadataComponent(o.SnapshotMetadataComponent))
	}
	if o.EvacuatorComponent != "" {
		out = append(out, evacuatorComponent(o.EvacuatorComponent))
	}
	return out
}

// valueExpr is the template expression of a component's value.
func (c Component) valueExpr() string { return ".Values." + c.Value + ".enabled" }

// renderWithComponents renders the install at configDir with the kustomize components on top,
// through an overlay in a temporary directory.
func renderWithComponents(configDir string, components []string) (*Install, error) {
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
	body := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + base + "\n"
	if len(components) > 0 {
		body += "components:\n"
	}
	for _, c := range components {
		comp, err := rel(c)
		if err != nil {
			return nil, err
		}
		body += "- " + comp + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(body), 0o600); err != nil {
		return nil, fmt.Errorf("write overlay: %w", err)
	}
	return Render(dir)
}

// objectKey identifies an object of the install.
func objectKey(o *unstructured.Unstructured) string {
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// variants is the install rendered with every subset of the components: index mask holds the
// install with component i on where bit i of mask is set (variants[0] is the install itself).
type variants struct {
	components []Component
	installs   []map[string]*unstructured.Unstructured
	// ordered holds the same objects in render order.
	ordered [][]*unstructured.Unstructured
}

// renderVariants renders inst's configDir with every subset of components.
func renderVariants(inst *Install, configDir string, components []Component) (*variants, error) {
	n := 1 << len(components)
	v := &variants{components: components, installs: make([]map[string]*unstructured.Unstructured, n),
		ordered: make([][]*unstructured.Unstructured, n)}
	for mask := range n {
		r := inst
		if mask != 0 {
			var dirs []string
			for i, c := range components {
				if mask&(1<<i) != 0 {
					dirs = append(dirs, c.Dir)
				}
			}
			var err error
			if r, err = renderWithComponents(configDir, dirs); err != nil {
				return nil, err
			}
		}
		objs := map[string]*unstructured.Unstructured{}
		for _, o := range r.Objects {
			objs[objectKey(o)] = o
		}
		v.installs[mask], v.ordered[mask] = objs, r.Objects
	}
	return v, v.check()
}

// check refuses what the chart cannot express: a component that changes a CRD (the chart installs
// CRDs unconditionally), removes an object of the install, or adds an object another component
// adds or changes.
func (v *variants) check() error {
	base := v.installs[0]
	for mask := 1; mask < len(v.installs); mask++ {
		objs := v.installs[mask]
		for k := range base {
			if _, ok := objs[k]; !ok {
				return fmt.Errorf("the components %s remove %s", v.names(mask), k)
			}
		}
		for k, o := range objs {
			b, ok := base[k]
			if ok && o.GetKind() == "CustomResourceDefinition" && !reflect.DeepEqual(o.Object, b.Object) {
				return fmt.Errorf("the components %s change CRD %s: the chart installs CRDs unconditionally",
					v.names(mask), o.GetName())
			}
		}
	}
	for i := range v.components {
		for k, o := range v.installs[1<<i] {
			if _, ok := base[k]; ok {
				continue
			}
			for mask, objs := range v.installs {
				other, ok := objs[k]
				switch {
				case mask&(1<<i) == 0 && ok:
					return fmt.Errorf("%s is added by both %s and %s", k, v.components[i].Value, v.names(mask))
				case mask&(1<<i) != 0 && !reflect.DeepEqual(other.Object, o.Object):
					return fmt.Errorf("%s, which %s adds, is changed by %s", k, v.components[i].Value, v.names(mask))
				}
			}
		}
	}
	return nil
}

// names are the values of the components in mask.
func (v *variants) names(mask int) string {
	var n []string
	for i, c := range v.components {
		if mask&(1<<i) != 0 {
			n = append(n, c.Value)
		}
	}
	return strings.Join(n, "+")
}

// added are the objects only component i adds, in the order of its own render.
func (v *variants) added(i int) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range v.ordered[1<<i] {
		if _, ok := v.installs[0][objectKey(o)]; !ok {
			out = append(out, o)
		}
	}
	return out
}

// template is the template of an object of the install: its forms under the components that change
// it, nested by the components' values; a plain document when none does.
func (v *variants) template(key, namespace string) (string, error) {
	var nest func(level, mask int) (string, error)
	nest = func(level, mask int) (string, error) {
		if level == len(v.components) {
			text, err := templateYAML(v.installs[mask][key], namespace)
			return ensureDocStart(text), err
		}
		with, err := nest(level+1, mask|1<<level)
		if err != nil {
			return "", err
		}
		without, err := nest(level+1, mask)
		if err != nil || with == without {
			return without, err
		}
		return "{{- if " + v.components[level].valueExpr() + " }}\n" + with + "{{- else }}\n" + without +
			"{{- end }}\n", nil
	}
	return nest(0, 0)
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

// addedTemplate holds the objects only component c adds, behind its value.
func addedTemplate(c Component, objs []*unstructured.Unstructured, namespace string) (string, error) {
	var b strings.Builder
	b.WriteString(generatedHeader + "{{- if " + c.valueExpr() + " }}\n")
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
