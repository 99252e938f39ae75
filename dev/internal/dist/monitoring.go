package dist

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/lvm-operator/lvm-operator/internal/testing/kustomize"
)

// Outputs of the monitoring kustomization (config/prometheus).
const (
	// MonitoringFile holds the ServiceMonitor and the PrometheusRule, for clusters with the
	// Prometheus Operator.
	MonitoringFile = "dist/monitoring.yaml"
	// RulesFile is the PrometheusRule's spec as a Prometheus rule file (rule_files:), for a
	// Prometheus without the operator; the promtool tests under test/prometheus load it.
	RulesFile = "dist/prometheus-rules.yaml"
	// monitoringTemplate is the chart's template of the same objects, behind monitoring.enabled.
	monitoringTemplate = ChartDir + "/templates/monitoring.yaml"
)

// monitoringFiles renders o.MonitoringDir into MonitoringFile, RulesFile and the chart's template;
// nothing when o.MonitoringDir is empty.
func monitoringFiles(o Options, namespace string) (map[string][]byte, error) {
	if o.MonitoringDir == "" {
		return nil, nil
	}
	out, err := kustomize.Build(o.MonitoringDir)
	if err != nil {
		return nil, err
	}
	objs, err := kustomize.Decode(out)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		MonitoringFile: append([]byte(generatedHeader+
			"# Needs the Prometheus Operator: kubectl apply --server-side -f dist/monitoring.yaml\n"), out...),
	}
	var tpl strings.Builder
	tpl.WriteString(generatedHeader + "{{- if .Values.monitoring.enabled }}\n")
	for _, obj := range objs {
		b, err := toYAML(obj.Object)
		if err != nil {
			return nil, err
		}
		// The alerts' own templates ({{ $labels.node }}) must reach Prometheus as they are.
		text := strings.ReplaceAll(string(b), "{{", `{{ "{{" }}`)
		text = strings.ReplaceAll(text, "namespace: "+namespace+"\n", "namespace: "+tplNamespace+"\n")
		if !strings.HasPrefix(text, "---\n") {
			text = "---\n" + text
		}
		tpl.WriteString(text)
		if obj.GetKind() != "PrometheusRule" {
			continue
		}
		spec, ok := obj.Object["spec"]
		if !ok {
			return nil, fmt.Errorf("PrometheusRule %s has no spec", obj.GetName())
		}
		rules, err := toYAML(spec)
		if err != nil {
			return nil, err
		}
		files[RulesFile] = append([]byte(generatedHeader+
			"# The alerts of "+MonitoringFile+" as a Prometheus rule file (rule_files:).\n"), rules...)
	}
	tpl.WriteString("{{- end }}\n")
	if _, ok := files[RulesFile]; !ok {
		return nil, fmt.Errorf("kustomize build %s: no PrometheusRule", o.MonitoringDir)
	}
	files[monitoringTemplate] = []byte(tpl.String())
	if bytes.Contains(files[monitoringTemplate], []byte(namespace)) {
		return nil, fmt.Errorf("%s still names namespace %s", monitoringTemplate, namespace)
	}
	return files, nil
}
