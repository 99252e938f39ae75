package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// floor is what provisioning cannot beat on this cluster: one lvcreate (and lvremove) of the same
// kind on the same nodes, timed inside the node, plus the apiserver's round trip.
type floor struct {
	VG   string `json:"vg"`
	Pool string `json:"pool,omitempty"`
	// Per node, the lvcreate and lvremove samples in milliseconds.
	Lvcreate map[string][]float64 `json:"lvcreateMs"`
	Lvremove map[string][]float64 `json:"lvremoveMs"`
	// APIServer samples of create, get and delete of a ConfigMap, milliseconds each.
	APICreate []float64 `json:"apiCreateMs"`
	APIGet    []float64 `json:"apiGetMs"`
	APIDelete []float64 `json:"apiDeleteMs"`
	// Per node, the CPU idle % over the last second before the samples, and how many seconds the
	// floor waited for it (quietScript).
	QuietIdlePct     map[string]int `json:"quietIdlePct,omitempty"`
	QuietWaitSeconds map[string]int `json:"quietWaitSeconds,omitempty"`
}

// median of the samples (0 for none).
func median(v []float64) float64 { return percentile(slices.Sorted(slices.Values(v)), 50) }

func all(m map[string][]float64) []float64 {
	var out []float64
	for _, v := range m {
		out = append(out, v...)
	}
	return out
}

// roundTrip is the median create + get + delete of a ConfigMap.
func (f *floor) roundTrip() float64 {
	return median(f.APICreate) + median(f.APIGet) + median(f.APIDelete)
}

// create is the provisioning floor: the median lvcreate plus one round trip.
func (f *floor) create() float64 { return median(all(f.Lvcreate)) + f.roundTrip() }

// remove is the deletion floor: the median lvremove plus one round trip.
func (f *floor) remove() float64 { return median(all(f.Lvremove)) + f.roundTrip() }

func (f *floor) describe() string {
	kind := "thick"
	if f.Pool != "" {
		kind = "thin in pool " + f.Pool
	}
	return fmt.Sprintf("lvcreate %s (%s in VG %s, median of %d on %d nodes) + apiserver round trip %s "+
		"(create %s, get %s, delete %s of a ConfigMap) = %s; lvremove %s + round trip = %s",
		ms(median(all(f.Lvcreate))), kind, f.VG, len(all(f.Lvcreate)), len(f.Lvcreate), ms(f.roundTrip()),
		ms(median(f.APICreate)), ms(median(f.APIGet)), ms(median(f.APIDelete)), ms(f.create()),
		ms(median(all(f.Lvremove))), ms(f.remove())) + f.describeQuiet()
}

// describeQuiet says how long the nodes took to be quiet, and which were not.
func (f *floor) describeQuiet() string {
	if len(f.QuietWaitSeconds) == 0 {
		return ""
	}
	waits := slices.Sorted(maps.Values(f.QuietWaitSeconds))
	s := fmt.Sprintf("; sampled once the node's CPU was %d %% idle (waited %d–%d s)", quietIdlePct,
		waits[0], waits[len(waits)-1])
	for _, node := range slices.Sorted(maps.Keys(f.QuietIdlePct)) {
		if f.QuietIdlePct[node] < quietIdlePct {
			s += fmt.Sprintf("; %s NOT quiet after %d s (%d %% idle)", node, f.QuietWaitSeconds[node],
				f.QuietIdlePct[node])
		}
	}
	return s
}

// floorProbe measures the floor through the node agents (demo.AgentExec: pods/exec into the agent
// on the node, nsenter into the node's mount namespace), as the e2e suite runs lvm2 on a node, or,
// for another driver, through the --node-shell pods the same way (nodeExec). Either way the
// samples are the same lvcreate command line, timed inside the node.
type floorProbe struct {
	cfg *rest.Config
	c   client.Client
	cs  kubernetes.Interface
	o   *options
}

// deviceClass finds the VG and thin pool behind the StorageClass parameters (topolvm.io/device-class)
// in the LVMClusters.
func (p *floorProbe) deviceClass(ctx context.Context, params map[string]string) (vg, pool string, err error) {
	dc := params[driver.ParamDeviceClass]
	var list lvmv1alpha1.LVMClusterList
	if err := p.c.List(ctx, &list); err != nil {
		return "", "", fmt.Errorf("list LVMClusters: %w", err)
	}
	for _, c := range list.Items {
		for _, d := range c.Spec.Storage.DeviceClasses {
			if d.Name == dc || (dc == "" && d.Default) {
				if d.ThinPoolConfig != nil {
					pool = d.ThinPoolConfig.Name
				}
				return d.Name, pool, nil
			}
		}
	}
	return "", "", fmt.Errorf("no LVMCluster has device class %q of StorageClass %s", dc, p.o.storageClass)
}

// measure times o.floorSamples lvcreate/lvremove pairs on every node and the apiserver round trip.
func (p *floorProbe) measure(ctx context.Context, params map[string]string, nodes []string) (*floor, error) {
	vg, pool, err := p.floorTarget(ctx, params)
	if err != nil {
		return nil, err
	}
	size, err := resourceBytes(p.o.size)
	if err != nil {
		return nil, err
	}
	f := &floor{VG: vg, Pool: pool, Lvcreate: map[string][]float64{}, Lvremove: map[string][]float64{},
		QuietIdlePct: map[string]int{}, QuietWaitSeconds: map[string]int{}}
	for _, node := range nodes {
		script, err := lvcreateScript(vg, pool, size, p.o.runID, p.o.floorSamples)
		if err != nil {
			return nil, err
		}
		out, err := p.nodeExec(ctx, node, script)
		if err != nil {
			return nil, fmt.Errorf("lvcreate floor on %s: %w\n%s", node, err, out)
		}
		f.Lvcreate[node], f.Lvremove[node], err = parseSamples(out)
		if err != nil {
			return nil, fmt.Errorf("lvcreate floor on %s: %w", node, err)
		}
		if pct, waited, ok := parseQuiet(out); ok {
			f.QuietIdlePct[node], f.QuietWaitSeconds[node] = pct, waited
		}
	}
	if err := p.apiRoundTrips(ctx, f); err != nil {
		return nil, err
	}
	return f, nil
}

// Before its samples the floor waits for a quiet node: CPU at least quietIdlePct % idle over a
// second, for at most quietMaxSeconds. Right after the cluster is Ready a node still starts pods
// and the agent discovers its disks; the floor measured then was three times the lvcreate of the
// claim that followed (2026-11-27: 929 ms against 277 ms).
const (
	quietIdlePct    = 80
	quietMaxSeconds = 120
)

// quietScript waits, for at most maxSeconds, until the node's CPU is idlePct % idle over a second
// (from /proc/stat) and prints "quiet <idle %> <seconds waited>".
func quietScript(idlePct, maxSeconds int) string {
	return fmt.Sprintf(`cpu() { read -r _ u n s i w q sq st _ </proc/stat; echo $((u+n+s+i+w+q+sq+st)) $((i+w)); }
waited=0
while :; do
	set -- $(cpu); t0=$1 i0=$2
	sleep 1
	set -- $(cpu); dt=$(($1-t0)); [ "$dt" -gt 0 ] || dt=1
	pct=$(( ($2-i0)*100/dt ))
	if [ "$pct" -ge %d ] || [ "$waited" -ge %d ]; then break; fi
	waited=$((waited+1))
done
echo "quiet $pct $waited"
`, idlePct, maxSeconds)
}

// lvcreateScript is the node script: wait for a quiet node (quietScript), then n times lvcreate
// an LV with exactly the command line the node agent runs (its nsenter prefix, lvm with the
// archive bound, internal/lvm's builders) plus a tag marking it as the benchmark's, time it in
// nanoseconds inside the node, lvremove it the agent's way and time that; whatever fails, the
// EXIT trap removes every LV with the run's tag.
func lvcreateScript(vg, pool string, size uint64, runID string, n int) (string, error) {
	tag := "lvms-bench-" + runID
	var b strings.Builder
	fmt.Fprintf(
		&b,
		"trap 'lvremove -y -S lv_tags=%s >/dev/null 2>&1' EXIT\nset -e\n%s",
		tag,
		quietScript(quietIdlePct, quietMaxSeconds),
	)
	for i := range n {
		name := fmt.Sprintf("bench-floor-%s-%d", runID, i)
		var (
			args []string
			err  error
		)
		if pool != "" {
			args, err = lvm.ThinLVOptions{Name: name, Pool: pool, VirtualSize: size, Tags: []string{tag}}.Args(vg)
		} else {
			args, err = lvm.LVOptions{Name: name, Size: size, Tags: []string{tag}}.Args(vg)
		}
		if err != nil {
			return "", fmt.Errorf("lvcreate command line: %w", err)
		}
		fmt.Fprintf(&b, "a=$(date +%%s%%N); %s >/dev/null; b=$(date +%%s%%N); %s >/dev/null; "+
			"c=$(date +%%s%%N); echo \"sample $((b-a)) $((c-b))\"\n",
			agentCommand(args), agentCommand([]string{"lvremove", "-y", vg + "/" + name}))
	}
	return b.String(), nil
}

// agentCommand is the shell command line of lvm2 subcommand args as the node agent runs it.
func agentCommand(args []string) string {
	words := append(append(exec.NSEnterPrefix(), lvm.Command), lvm.CommandArgs(args...)...)
	for i, w := range words {
		if strings.ContainsAny(w, " {}'\"$\\*?;&|<>()") {
			words[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(words, " ")
}

// parseSamples reads the "sample <lvcreate ns> <lvremove ns>" lines of lvcreateScript.
func parseSamples(out string) (create, remove []float64, err error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "sample" {
			continue
		}
		c, err1 := strconv.ParseInt(f[1], 10, 64)
		r, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, nil, fmt.Errorf("bad sample line %q", sc.Text())
		}
		create = append(create, float64(c)/1e6)
		remove = append(remove, float64(r)/1e6)
	}
	if len(create) == 0 {
		return nil, nil, fmt.Errorf("no samples in the output:\n%s", out)
	}
	return create, remove, nil
}

// parseQuiet reads the "quiet <idle %> <seconds waited>" line of quietScript.
func parseQuiet(out string) (pct, waited int, ok bool) {
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "quiet" {
			continue
		}
		p, err1 := strconv.Atoi(f[1])
		w, err2 := strconv.Atoi(f[2])
		if err1 == nil && err2 == nil {
			return p, w, true
		}
	}
	return 0, 0, false
}

// apiSamples is how many times apiRoundTrips creates, gets and deletes a ConfigMap.
const apiSamples = 10

// apiRoundTrips times apiSamples creates, gets and deletes of a ConfigMap in the namespace.
func (p *floorProbe) apiRoundTrips(ctx context.Context, f *floor) error {
	cms := p.cs.CoreV1().ConfigMaps(p.o.namespace)
	for i := range apiSamples {
		name := fmt.Sprintf("bench-rtt-%s-%d", p.o.runID, i)
		t0 := time.Now()
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}},
			metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ConfigMap %s: %w", name, err)
		}
		t1 := time.Now()
		if _, err := cms.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("get ConfigMap %s: %w", name, err)
		}
		t2 := time.Now()
		if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete ConfigMap %s: %w", name, err)
		}
		t3 := time.Now()
		f.APICreate = append(f.APICreate, msSince(t0, t1))
		f.APIGet = append(f.APIGet, msSince(t1, t2))
		f.APIDelete = append(f.APIDelete, msSince(t2, t3))
	}
	return nil
}

func msSince(a, b time.Time) float64 { return float64(b.Sub(a).Microseconds()) / 1000 }
