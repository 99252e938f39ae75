// Package monitoring checks that the alerts (dist/prometheus-rules.yaml, from config/prometheus) and
// the Grafana dashboard (config/grafana) use only metric names that lvms exports:
// its test (run by make test-unit and make verify) fails on a name that no collector of the operator or
// the node agent describes, so a renamed metric cannot leave a silent alert or an empty panel behind.
package monitoring

import (
	"fmt"
	"os"
	"regexp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
	"github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/nodeagent"
)

// Files are the files checked, relative to the repository root.
var Files = []string{"dist/prometheus-rules.yaml", "config/grafana/lvms-dashboard.json"}

// others are the metrics of other exporters the files may use: Prometheus' own target health.
var others = []string{"up"}

// ourName matches a metric name of lvms's families in PromQL.
var ourName = regexp.MustCompile(`\b(?:lvms|topolvm)_[a-z0-9_]+\b`)

// anyName matches a selector's metric name: an identifier directly followed by { or [.
var anyName = regexp.MustCompile(`\b([a-zA-Z_:][a-zA-Z0-9_:]*)[{\[]`)

// fqName pulls the name out of a prometheus.Desc's String().
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Exported returns every metric name the operator and the node agent export, histograms with their
// _bucket, _sum and _count series.
func Exported() []string {
	var cs []prometheus.Collector
	cs = append(cs, nodeagent.NewMetrics("node", nil), lvmcluster.NewCollector(nil, ""))
	cs = append(cs, exec.NewMetrics().Collectors()...)
	cs = append(cs, csi.Collectors()...)
	names := []string{nodeagent.MetricOrphanLogicalVolumes}
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range cs {
			c.Describe(ch)
		}
		close(ch)
	}()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1], m[1]+"_bucket", m[1]+"_sum", m[1]+"_count")
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Unknown returns, for each file under root, the metric names it uses that are not exported.
func Unknown(root string) (map[string][]string, error) {
	known := append(Exported(), others...)
	out := map[string][]string{}
	for _, f := range Files {
		b, err := os.ReadFile(root + "/" + f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		used := ourName.FindAllString(string(b), -1)
		for _, m := range anyName.FindAllStringSubmatch(string(b), -1) {
			used = append(used, m[1])
		}
		if len(used) == 0 {
			return nil, fmt.Errorf("%s uses no metric at all: the check would prove nothing", f)
		}
		for _, name := range used {
			if !slices.Contains(known, name) && !slices.Contains(out[f], name) {
				out[f] = append(out[f], name)
			}
		}
	}
	return out, nil
}
