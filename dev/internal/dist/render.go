// Package dist renders the install manifests of lvms from their one source, the kustomize tree
// under config/: dist/install.yaml (kubectl apply), the Helm chart charts/lvms and the OLM bundle
// bundle/. Nothing under those three is edited by hand; `make dist` writes them and `make verify`
// fails when they differ from what this package renders.
package dist

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/lvm-operator/lvm-operator/internal/testing/kustomize"
)

// Options say what to render.
type Options struct {
	// ConfigDir is the kustomize directory of the whole install (config/default).
	ConfigDir string
	// SampleFile is the LVMCluster sample shown in the bundle's alm-examples.
	SampleFile string
	// MonitoringDir is the kustomize directory of the Prometheus Operator objects (config/prometheus);
	// empty renders none.
	MonitoringDir string
	// Version is the release version of the chart and the bundle (semver, no leading v).
	Version string
	// ExtenderComponent is the kustomize component of the scheduler extender
	// (config/components/scheduler-extender): the chart's value schedulerExtender.enabled; empty
	// leaves it out of the chart.
	ExtenderComponent string
	// SnapshotMetadataComponent is the kustomize component of the snapshot metadata service
	// (config/components/snapshot-metadata): the chart's value snapshotMetadata.enabled, and in the
	// OLM bundle, off until a Subscription sets LVMS_SNAPSHOT_METADATA=true (bundleInstall); empty
	// leaves it out of both.
	SnapshotMetadataComponent string
	// EvacuatorComponent is the kustomize component of the evacuator (config/components/evacuator):
	// the chart's value evacuator.enabled; the OLM bundle leaves it out (evacuatorComponent); empty
	// leaves it out of the chart.
	EvacuatorComponent string
}

// Install is the rendered install: the multi-document YAML and its objects in the same order.
type Install struct {
	YAML    []byte
	Objects []*unstructured.Unstructured
	// Namespace is the namespace the install puts the operator in.
	Namespace string
}

// Render builds the kustomization at dir, as `kubectl kustomize dir` does.
func Render(dir string) (*Install, error) {
	out, err := kustomize.Build(dir)
	if err != nil {
		return nil, err
	}
	objs, err := kustomize.Decode(out)
	if err != nil {
		return nil, err
	}
	inst := &Install{YAML: out, Objects: objs}
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			inst.Namespace = o.GetName()
		}
	}
	if inst.Namespace == "" {
		return nil, fmt.Errorf("kustomize build %s: no Namespace object: the install must create its namespace", dir)
	}
	return inst, nil
}

// find returns the objects of a kind, in render order.
func (i *Install) find(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range i.Objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// one returns the single object of a kind, or an error naming how many there are.
func (i *Install) one(kind string) (*unstructured.Unstructured, error) {
	objs := i.find(kind)
	if len(objs) != 1 {
		return nil, fmt.Errorf("the install has %d objects of kind %s, want exactly 1", len(objs), kind)
	}
	return objs[0], nil
}

// toYAML renders objects as a multi-document stream, each document with a leading "---".
func toYAML(objs ...any) ([]byte, error) {
	var b bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("encode YAML: %w", err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}

// fileName is a stable, readable file name for an object: <kind>-<name>.yaml in lower case.
func fileName(o *unstructured.Unstructured) string {
	return strings.ToLower(o.GetKind()) + "-" + strings.ReplaceAll(o.GetName(), ".", "-") + ".yaml"
}

// crdFileName is the name operator-sdk and controller-gen give a CRD file: <group>_<plural>.yaml.
func crdFileName(crd *unstructured.Unstructured) (string, error) {
	group, _, err := unstructured.NestedString(crd.Object, "spec", "group")
	if err != nil || group == "" {
		return "", fmt.Errorf("CRD %s: no spec.group", crd.GetName())
	}
	plural, _, err := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	if err != nil || plural == "" {
		return "", fmt.Errorf("CRD %s: no spec.names.plural", crd.GetName())
	}
	return group + "_" + plural + ".yaml", nil
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
