package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/demo"
	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
)

const (
	// metricsPort is the HTTPS metrics port of the operator and of the node agents.
	metricsPort = 8443
	// metricsReader is the ClusterRole that may read them.
	metricsReader = "lvms-metrics-reader"
	// operatorLabel selects the operator's pod.
	operatorLabel = "app.kubernetes.io/name=lvms-operator"
)

// resourceUsage is one process's RSS and CPU seconds before and after the run.
type resourceUsage struct {
	Pod       string  `json:"pod"`
	Node      string  `json:"node"`
	RSSBefore float64 `json:"rssBeforeBytes"`
	RSSAfter  float64 `json:"rssAfterBytes"`
	CPUBefore float64 `json:"cpuBeforeSeconds"`
	CPUAfter  float64 `json:"cpuAfterSeconds"`
	// Commands is the increase of lvms_host_commands_total over the run by "command/result", and
	// of lvms_host_command_duration_seconds_sum by "command/result/seconds".
	Commands map[string]float64 `json:"hostCommandsDuringRun,omitempty"`
	before   map[string]float64
}

func (u resourceUsage) describe() string {
	s := fmt.Sprintf("%-40s RSS %.1f → %.1f MiB, CPU %.2f s over the run", u.Pod+" ("+u.Node+")",
		u.RSSBefore/(1<<20), u.RSSAfter/(1<<20), u.CPUAfter-u.CPUBefore)
	if u.CPUAfter < u.CPUBefore {
		// The counters started again: the container was restarted during the run.
		s += " (RESTARTED during the run: the after figures are the new process's)"
	}
	var cmds []string
	for _, k := range slices.Sorted(maps.Keys(u.Commands)) {
		if strings.HasSuffix(k, secondsSuffix) {
			continue
		}
		c := fmt.Sprintf("%s %.0f", k, u.Commands[k])
		if sec, ok := u.Commands[k+secondsSuffix]; ok {
			c += fmt.Sprintf(" (%s each)", ms(sec*1000/u.Commands[k]))
		}
		cmds = append(cmds, c)
	}
	if len(cmds) > 0 {
		s += "; host commands: " + strings.Join(cmds, ", ")
	}
	return s
}

// resourceProbe reads process_resident_memory_bytes and process_cpu_seconds_total from the
// operator's and the node agents' metrics endpoints, from inside the cluster network: curl in the
// node agent on the target's node, with the token of a service account bound to
// lvms-metrics-reader (as the e2e suite's TestNodeAgentMetrics and a Prometheus scrape do).
type resourceProbe struct {
	cfg   *rest.Config
	c     client.Client
	cs    kubernetes.Interface
	o     *options
	token string
	usage map[string]*resourceUsage
	// bound are the ClusterRoleBindings of the service account, removed by teardown.
	bound []string
}

// before takes the first reading; a failure only disables the probe (the numbers are extra).
func (p *resourceProbe) before(ctx context.Context, log io.Writer) {
	if err := p.setup(ctx); err != nil {
		fmt.Fprintf(log, "warning: no resource figures: %v\n", err)
		return
	}
	p.usage = map[string]*resourceUsage{}
	if err := p.read(ctx, func(u *resourceUsage, m processMetrics) {
		u.RSSBefore, u.CPUBefore, u.before = m.rss, m.cpu, m.commands
	}); err != nil {
		fmt.Fprintf(log, "warning: no resource figures: %v\n", err)
		p.usage = nil
	}
}

// after takes the second reading and removes the probe's service account binding.
func (p *resourceProbe) after(ctx context.Context, log io.Writer) []resourceUsage {
	defer p.teardown()
	if p.usage == nil {
		return nil
	}
	if err := p.read(ctx, func(u *resourceUsage, m processMetrics) {
		u.RSSAfter, u.CPUAfter = m.rss, m.cpu
		for k, v := range m.commands {
			if d := v - u.before[k]; d > 0 {
				if u.Commands == nil {
					u.Commands = map[string]float64{}
				}
				u.Commands[k] = d
			}
		}
	}); err != nil {
		fmt.Fprintf(log, "warning: no resource figures after the run: %v\n", err)
		return nil
	}
	out := make([]resourceUsage, 0, len(p.usage))
	for _, u := range p.usage {
		out = append(out, *u)
	}
	return out
}

// probeAccount is the service account the probe and the profiler read with.
const probeAccount = "lvms-bench-metrics"

func (p *resourceProbe) bindingName(role string) string { return role + "-bench-" + p.o.namespace }

// setup creates the service account, binds it to the reader role and gets a token.
func (p *resourceProbe) setup(ctx context.Context) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: probeAccount, Namespace: p.o.namespace}}
	if err := p.c.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create service account: %w", err)
	}
	if err := p.bind(ctx, metricsReader); err != nil {
		return err
	}
	tr, err := p.cs.CoreV1().ServiceAccounts(
		p.o.namespace,
	).CreateToken(
		ctx,
		probeAccount,
		&authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))},
		},
		metav1.CreateOptions{},
	)
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	p.token = tr.Status.Token
	return nil
}

// bind binds the probe's service account to a ClusterRole, until teardown.
func (p *resourceProbe) bind(ctx context.Context, role string) error {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: p.bindingName(role)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.ServiceAccountKind, Name: probeAccount, Namespace: p.o.namespace},
		},
	}
	if err := p.c.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bind %s: %w", role, err)
	}
	p.bound = append(p.bound, binding.Name)
	return nil
}

func (p *resourceProbe) teardown() {
	for _, name := range p.bound {
		_ = p.c.Delete(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	p.bound = nil
}

// pods are the running operator and node agent pods.
func (p *resourceProbe) pods(ctx context.Context) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	for _, sel := range []string{operatorLabel, "app.kubernetes.io/name=" + lvmcluster.NodeDaemonSetName} {
		list, err := p.cs.CoreV1().Pods(p.o.operatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, fmt.Errorf("list pods %s: %w", sel, err)
		}
		for _, pod := range list.Items {
			if pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" {
				pods = append(pods, pod)
			}
		}
	}
	return pods, nil
}

// read scrapes every operator and node agent pod and hands its figures to set.
func (p *resourceProbe) read(ctx context.Context, set func(u *resourceUsage, m processMetrics)) error {
	pods, err := p.pods(ctx)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		script := fmt.Sprintf("curl -sSkf -H 'Authorization: Bearer %s' https://%s:%d/metrics | "+
			"grep -E '^(process_resident_memory_bytes|process_cpu_seconds_total|go_memstats_heap_inuse_bytes|"+
			"lvms_host_commands_total|"+
			"lvms_host_command_duration_seconds_sum)[ {]'", p.token, pod.Status.PodIP, metricsPort)
		out, err := demo.AgentExec(ctx, p.cfg, p.c, p.cs, p.o.operatorNamespace, pod.Spec.NodeName, script)
		if err != nil {
			return fmt.Errorf("scrape %s: %w\n%s", pod.Name, err, out)
		}
		u := p.usage[pod.Name]
		if u == nil {
			u = &resourceUsage{Pod: pod.Name, Node: pod.Spec.NodeName}
			p.usage[pod.Name] = u
		}
		set(u, parseProcessMetrics(out))
	}
	return nil
}

// processMetrics are the figures read from one metrics endpoint.
type processMetrics struct {
	rss, cpu float64
	// heap is go_memstats_heap_inuse_bytes: the part of rss that is Go heap in use.
	heap float64
	// commands are lvms_host_commands_total by "command/result".
	commands map[string]float64
}

// hostCommandRE matches a sample of lvms_host_commands_total or of the sum of
// lvms_host_command_duration_seconds.
var hostCommandRE = regexp.MustCompile(
	`^lvms_host_command(s_total|_duration_seconds_sum)\{command="([^"]*)",result="([^"]*)"\}$`)

// secondsSuffix marks the duration sums among processMetrics.commands.
const secondsSuffix = "/seconds"

// parseProcessMetrics reads process_resident_memory_bytes, process_cpu_seconds_total and
// lvms_host_commands_total from Prometheus text output.
func parseProcessMetrics(out string) processMetrics {
	m := processMetrics{commands: map[string]float64{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "process_resident_memory_bytes":
			m.rss = v
		case "process_cpu_seconds_total":
			m.cpu = v
		case "go_memstats_heap_inuse_bytes":
			m.heap = v
		default:
			if c := hostCommandRE.FindStringSubmatch(f[0]); c != nil {
				key := c[2] + "/" + c[3]
				if c[1] != "s_total" {
					key += secondsSuffix
				}
				m.commands[key] = v
			}
		}
	}
	return m
}
