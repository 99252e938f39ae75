package lvmcluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// nodeDaemonSet renders nodeDaemonSetFor as the API object the API server would store.
func nodeDaemonSet(t *testing.T, opts Options) *appsv1.DaemonSet {
	t.Helper()
	return rendered[appsv1.DaemonSet](t, nodeDaemonSetFor(testCluster(), opts))
}

// testCluster is the LVMCluster the builders are called with.
func testCluster() *lvmv1alpha1.LVMCluster {
	c := &lvmv1alpha1.LVMCluster{}
	c.Name, c.Namespace = "my-lvmcluster", "lvms-system"
	return c
}

// rendered converts an apply configuration to the API object T it describes.
func rendered[T any](t *testing.T, applyConfig any) *T {
	t.Helper()
	b, err := json.Marshal(applyConfig)
	if err != nil {
		t.Fatal(err)
	}
	var obj T
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	return &obj
}

func containerNamed(t *testing.T, pod *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	i := slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no container %q", name)
	}
	return &pod.Containers[i]
}

// TestNodeDaemonSetPorts: the node agent serves health on 9808 and metrics on 8443 (the port it is
// told to bind), and no two containers of the pod claim one port, with or without the sidecars.
func TestNodeDaemonSetPorts(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{name: "in-process registration and health", opts: Options{Namespace: "lvms-system", NodeImage: "lvms"}},
		{name: "with sidecars", opts: Options{Namespace: "lvms-system", NodeImage: "lvms",
			RegistrarImage: "registrar", LivenessProbeImage: "livenessprobe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &nodeDaemonSet(t, tt.opts).Spec.Template.Spec
			byName := map[string]int32{}
			used := map[int32]string{}
			for _, c := range pod.Containers {
				for _, p := range c.Ports {
					if other, ok := used[p.ContainerPort]; ok {
						t.Errorf("port %d: %s and %s/%s", p.ContainerPort, other, c.Name, p.Name)
					}
					used[p.ContainerPort] = c.Name + "/" + p.Name
					byName[p.Name] = p.ContainerPort
				}
			}
			if used[9809] != "" {
				t.Errorf("port 9809 is the livenessprobe sidecar's, not %s", used[9809])
			}
			if byName["healthz"] != 9808 || byName["metrics"] != 8443 {
				t.Errorf("ports %v, want healthz 9808 and metrics 8443", byName)
			}
			if args := containerNamed(t, pod, "node").Args; !slices.Contains(args, "--metrics-bind-address=:8443") {
				t.Errorf("node agent args %q do not bind metrics to the metrics port", args)
			}
		})
	}
}

// TestNodeMetricsServiceSelectsTheAgent: the static Service lvms-node-metrics of config/metrics
// selects the pods of the DaemonSet the operator creates and targets their metrics port.
func TestNodeMetricsServiceSelectsTheAgent(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "metrics", "node_service.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{}
	if err := yaml.Unmarshal(b, svc); err != nil {
		t.Fatal(err)
	}
	pod := nodeDaemonSet(t, Options{Namespace: "lvms-system", NodeImage: "lvms"}).Spec.Template
	if len(svc.Spec.Selector) == 0 {
		t.Fatal("Service has no selector")
	}
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v {
			t.Errorf("Service selects %s=%s; pod labels %v", k, v, pod.Labels)
		}
	}
	node := containerNamed(t, &pod.Spec, "node")
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.Type != intstr.String {
			t.Errorf("Service port %s targets %s; target the container port by name", p.Name, p.TargetPort.String())
			continue
		}
		if !slices.ContainsFunc(node.Ports, func(cp corev1.ContainerPort) bool {
			return cp.Name == p.TargetPort.StrVal && cp.ContainerPort == nodeMetricsPort
		}) {
			t.Errorf("Service port %s targets %q, not the node agent's metrics port", p.Name, p.TargetPort.StrVal)
		}
	}
}

// TestDaemonSetSnapshotMetadata: with SnapshotMetadata the agent serves its endpoint on the fixed
// port with a projected volume of its key pair and the client CA only (no CA key reaches a node);
// without it, none of that is there.
func TestDaemonSetSnapshotMetadata(t *testing.T) {
	off := nodeDaemonSet(t, Options{Namespace: "lvms-system", NodeImage: "lvms"}).Spec.Template.Spec
	for _, a := range off.Containers[0].Args {
		if strings.HasPrefix(a, "--snapshot-metadata") {
			t.Errorf("without SnapshotMetadata the agent got %s", a)
		}
	}
	on := nodeDaemonSet(
		t,
		Options{Namespace: "lvms-system", NodeImage: "lvms", SnapshotMetadata: true},
	).Spec.Template.Spec
	agent := on.Containers[0]
	for _, want := range []string{"--snapshot-metadata-address=:9820", "--snapshot-metadata-cert-dir=/etc/lvms/snapshot-metadata"} {
		if !slices.Contains(agent.Args, want) {
			t.Errorf("args %v lack %s", agent.Args, want)
		}
	}
	if !slices.ContainsFunc(agent.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == 9820 }) {
		t.Errorf("ports %v lack 9820", agent.Ports)
	}
	var got []string
	for _, v := range on.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			for _, it := range src.Secret.Items {
				got = append(got, src.Secret.Name+"/"+it.Key)
			}
		}
	}
	want := []string{"lvms-snapshot-metadata-node-cert/tls.crt", "lvms-snapshot-metadata-node-cert/tls.key",
		"lvms-snapshot-metadata-client-cert/ca.crt"}
	if !slices.Equal(got, want) {
		t.Errorf("projected secret items %v, want %v", got, want)
	}
}

// TestNodeAgentGetsTimeToFinishItsCommands: a stopping node agent lets its host commands finish,
// each within exec.DefaultTimeout; the pod's grace period must allow one whole command, or a rollout
// SIGKILLs an lvcreate, lvremove or dd half-way.
func TestNodeAgentGetsTimeToFinishItsCommands(t *testing.T) {
	pod := &nodeDaemonSet(t, Options{Namespace: "lvms-system", NodeImage: "lvms"}).Spec.Template.Spec
	grace := pod.TerminationGracePeriodSeconds
	if grace == nil || time.Duration(*grace)*time.Second <= exec.DefaultTimeout {
		t.Fatalf("terminationGracePeriodSeconds %v, want more than one command's deadline (%v)", grace,
			exec.DefaultTimeout)
	}
}

// TestNodeAgentTransferBandwidth: spec.transfer.bandwidth becomes the node agent's
// --transfer-bandwidth; unset or 0 sets no limit.
func TestNodeAgentTransferBandwidth(t *testing.T) {
	for _, tt := range []struct {
		name     string
		transfer *lvmv1alpha1.TransferSpec
		want     string
	}{
		{"no transfer settings", nil, ""},
		{"zero: no limit", &lvmv1alpha1.TransferSpec{Bandwidth: new(resource.MustParse("0"))}, ""},
		{"a limit", &lvmv1alpha1.TransferSpec{Bandwidth: new(resource.MustParse("100Mi"))}, "--transfer-bandwidth=100Mi"},
		{"decimal", &lvmv1alpha1.TransferSpec{Bandwidth: new(resource.MustParse("1.5G"))}, "--transfer-bandwidth=1500M"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := testCluster()
			c.Spec.Transfer = tt.transfer
			ds := rendered[appsv1.DaemonSet](
				t,
				nodeDaemonSetFor(c, Options{Namespace: "lvms-system", NodeImage: "lvms"}),
			)
			args := containerNamed(t, &ds.Spec.Template.Spec, "node").Args
			got := ""
			for _, a := range args {
				if strings.HasPrefix(a, "--transfer-bandwidth") {
					got = a
				}
			}
			if got != tt.want {
				t.Errorf("args %q: bandwidth %q, want %q", args, got, tt.want)
			}
		})
	}
}
