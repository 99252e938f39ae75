//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodeMetricsService is the headless Service in front of the node agents' metrics endpoints.
const nodeMetricsService = "lvms-node-metrics"

// TestNodeAgentMetrics scrapes every node agent through the endpoints of its Service, as a
// ServiceMonitor would, with the token of a service account bound to lvms-metrics-reader, from
// inside the cluster network (the agent's own pod), and compares the topolvm_* series with what
// vgs and lvs say on that node at the same moment: the VG's size and free bytes for both classes,
// the thin pool's size and usage. Without a token, and with the token of an account not bound to
// the reader role, the endpoint refuses.
func TestNodeAgentMetrics(t *testing.T) {
	e := newEnv(t)
	reader := e.tokenOf("scraper", true)
	stranger := e.tokenOf("stranger", false)
	for node, ip := range e.metricsEndpoints() {
		t.Run(node, func(t *testing.T) {
			url := "https://" + ip + ":8443/metrics"
			codes := e.onAgent(node, fmt.Sprintf(
				"echo none=$(%[1]s %[2]s); echo stranger=$(%[1]s -H 'Authorization: Bearer %[3]s' %[2]s)",
				"curl -sk -o /dev/null -w '%{http_code}'", url, stranger))
			if strings.Contains(codes, "=200") {
				t.Fatalf("the metrics of %s are served without the reader role: %s", node, codes)
			}
			t.Logf("without the reader role: %s", strings.Join(strings.Fields(codes), ", "))
			var last string
			e.waitFor("metrics of "+node+" equal to vgs and lvs", func(context.Context) (bool, string, error) {
				out := e.onAgent(node, fmt.Sprintf(
					"curl -sSkf -H 'Authorization: Bearer %s' %s | grep '^topolvm_'; echo ---; %s; echo ---; %s",
					reader,
					url,
					"vgs --noheadings --units b --nosuffix -o vg_name,vg_size,vg_free",
					"lvs --noheadings --units b --nosuffix -o vg_name,lv_name,lv_size,data_percent,metadata_percent,lv_attr",
				))
				mismatch := compareMetrics(out)
				last = out
				return mismatch == "", mismatch, nil
			})
			t.Logf("metrics of %s match vgs and lvs:\n%s", node, last)
			// The agent counts its host commands: it has read lvm2's state (lvm fullreport) at least once.
			hosts := e.onAgent(
				node,
				fmt.Sprintf("curl -sSkf -H 'Authorization: Bearer %s' %s | grep '^lvms_host_commands_total'",
					reader, url),
			)
			if !regexp.MustCompile(
				`lvms_host_commands_total\{command="fullreport",result="ok"\} [1-9]`,
			).MatchString(
				hosts,
			) {
				t.Errorf("the node agent of %s does not count its lvm fullreport runs:\n%s", node, hosts)
			}
		})
	}
}

// tokenOf creates service account name in the test's namespace, binds it to the ClusterRole
// lvms-metrics-reader when reader is set, and returns a token of it.
func (e *env) tokenOf(name string, reader bool) string {
	e.t.Helper()
	e.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if reader {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "lvms-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: e.ns}},
		}
		if err := e.c.Create(e.ctx(), binding); err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), binding) })
	}
	tr, err := e.cs.CoreV1().ServiceAccounts(e.ns).CreateToken(e.ctx(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("token of %s: %v", name, err)
	}
	return tr.Status.Token
}

// metricsEndpoints returns the ready endpoints of the node agents' metrics Service by node.
func (e *env) metricsEndpoints() map[string]string {
	e.t.Helper()
	nodes := e.nodes()
	out := map[string]string{}
	e.waitFor("an endpoint of "+nodeMetricsService+" on every node", func(ctx context.Context) (bool, string, error) {
		var list discoveryv1.EndpointSliceList
		if err := e.c.List(ctx, &list, client.InNamespace(operatorNS),
			client.MatchingLabels{discoveryv1.LabelServiceName: nodeMetricsService}); err != nil {
			return false, "", err
		}
		clear(out)
		for _, s := range list.Items {
			for _, ep := range s.Endpoints {
				if ep.NodeName != nil && len(ep.Addresses) > 0 &&
					(ep.Conditions.Ready == nil || *ep.Conditions.Ready) {
					out[*ep.NodeName] = ep.Addresses[0]
				}
			}
		}
		return len(out) == len(nodes), fmt.Sprintf("endpoints %v", out), nil
	})
	return out
}

// seriesLine is one sample of the text exposition format: name{labels} value.
var seriesLine = regexp.MustCompile(`^(topolvm_[a-z_]+)\{([^}]*)\} (\S+)$`)

// classLabel finds the device_class label.
var classLabel = regexp.MustCompile(`device_class="([^"]*)"`)

// compareMetrics checks the scrape in the first part of out against the vgs and lvs output in the
// second and third, and returns what differs ("" when all agree). Device class names are the VG
// names (LVMS); the thin pool is the VG's LV with a 't' attribute.
func compareMetrics(out string) string {
	parts := strings.Split(out, "---")
	if len(parts) != 3 {
		return "unexpected output: " + out
	}
	got := map[string]float64{}
	for line := range strings.SplitSeq(parts[0], "\n") {
		m := seriesLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		c := classLabel.FindStringSubmatch(m[2])
		v, err := strconv.ParseFloat(m[3], 64)
		if c == nil || err != nil {
			return "unparsable series: " + line
		}
		got[m[1]+"/"+c[1]] = v
	}
	want := map[string]float64{}
	for line := range strings.SplitSeq(parts[1], "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			want["topolvm_volumegroup_size_bytes/"+f[0]] = atof(f[1])
			want["topolvm_volumegroup_available_bytes/"+f[0]] = atof(f[2])
		}
	}
	for line := range strings.SplitSeq(parts[2], "\n") {
		if f := strings.Fields(line); len(f) == 6 && strings.HasPrefix(f[5], "t") {
			want["topolvm_thinpool_size_bytes/"+f[0]] = atof(f[2])
			want["topolvm_thinpool_data_percent/"+f[0]] = atof(f[3])
			want["topolvm_thinpool_metadata_percent/"+f[0]] = atof(f[4])
		}
	}
	var diffs []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, k+" missing")
		case math.IsNaN(w):
			diffs = append(diffs, k+": lvm2's value does not parse")
		case math.Abs(g-w) > 0.006: // lvs prints percentages with two decimals
			diffs = append(diffs, fmt.Sprintf("%s = %v, lvm2 says %v", k, g, w))
		}
	}
	if len(want) == 0 || len(got) == 0 {
		diffs = append(diffs, "no series or no volume groups")
	}
	return strings.Join(diffs, "; ")
}

func atof(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}
