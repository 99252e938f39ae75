package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lvm-operator/lvm-operator/internal/operator"
	"github.com/lvm-operator/lvm-operator/internal/scheduler"
	"github.com/lvm-operator/lvm-operator/internal/testing/kustomize"
)

// buildWithSchedulerExtender builds config/default with the scheduler-extender component, as a
// user's overlay does.
func buildWithSchedulerExtender(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return buildWithComponent(t, "scheduler-extender")
}

// buildWithComponent builds config/default with the component config/components/<name>.
func buildWithComponent(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	overlay := t.TempDir()
	// kustomize refuses absolute paths to other kustomizations.
	base, err := filepath.Rel(overlay, filepath.Join(root, "config"))
	if err != nil {
		t.Fatal(err)
	}
	k := "resources:\n- " + filepath.Join(base, "default") +
		"\ncomponents:\n- " + filepath.Join(base, "components", name) + "\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := kustomize.Build(overlay)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kustomize.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func findObject(t *testing.T, objs []*unstructured.Unstructured, kind, name string, into any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no %s %s in the build", kind, name)
}

// TestSchedulerExtenderComponent checks that the component turns on what the code serves: the
// operator runs with the pod webhook flag, the extender runs `lvms scheduler` from the operator's
// image with a configuration file it accepts, on the loopback address only, and its probes and port
// agree with it.
func TestSchedulerExtenderComponent(t *testing.T) {
	objs := buildWithSchedulerExtender(t)

	var opd appsv1.Deployment
	findObject(t, objs, "Deployment", "lvms-operator", &opd)
	op := opd.Spec.Template.Spec.Containers[0]
	if !slices.Contains(op.Args, "--"+operator.PodMutatingWebhookFlag) {
		t.Errorf("operator args %v lack --%s", op.Args, operator.PodMutatingWebhookFlag)
	}
	if newOperatorCommand().Flags().Lookup(operator.PodMutatingWebhookFlag) == nil {
		t.Errorf("lvms operator has no flag --%s", operator.PodMutatingWebhookFlag)
	}

	var ds appsv1.DaemonSet
	findObject(t, objs, "DaemonSet", "lvms-scheduler", &ds)
	if ds.Namespace != "lvms-system" {
		t.Errorf("DaemonSet namespace %q", ds.Namespace)
	}
	c := ds.Spec.Template.Spec.Containers[0]
	if c.Image != op.Image || !strings.Contains(c.Image, ":") {
		t.Errorf("extender image %q, want the operator's pinned %q", c.Image, op.Image)
	}
	if len(c.Args) == 0 || c.Args[0] != "scheduler" {
		t.Fatalf("extender args %v", c.Args)
	}
	cmd := newSchedulerCommand()
	if err := cmd.ParseFlags(c.Args[1:]); err != nil {
		t.Fatalf("lvms scheduler refuses the DaemonSet's args %v: %v", c.Args[1:], err)
	}

	var cm corev1.ConfigMap
	findObject(t, objs, "ConfigMap", "lvms-scheduler-options", &cm)
	cfg, unknown, err := scheduler.ParseConfig([]byte(cm.Data["scheduler-options.yaml"]))
	if err != nil || len(unknown) > 0 {
		t.Fatalf("config: %v, unknown keys %v", err, unknown)
	}
	configPath := cmd.Flags().Lookup("config").Value.String()
	mount := c.VolumeMounts[0].MountPath
	if filepath.Dir(configPath) != mount {
		t.Errorf("--config %s is not in the ConfigMap's mount %s", configPath, mount)
	}
	port := c.Ports[0]
	if cfg.Listen != "127.0.0.1:9251" || port.ContainerPort != 9251 ||
		c.LivenessProbe.HTTPGet.Port.StrVal != port.Name || c.LivenessProbe.HTTPGet.Path != "/status" ||
		c.LivenessProbe.HTTPGet.Host != "127.0.0.1" || c.ReadinessProbe.HTTPGet.Host != "127.0.0.1" {
		t.Errorf("listen %q, port %+v, probes %+v %+v disagree: the extender serves unauthenticated HTTP "+
			"on the loopback address only, and the kubelet probes it there",
			cfg.Listen, port, c.LivenessProbe.HTTPGet, c.ReadinessProbe.HTTPGet)
	}
	for _, o := range objs {
		if o.GetKind() == "Service" && o.GetName() == "lvms-scheduler" {
			t.Errorf("the component ships Service lvms-scheduler, which cannot reach an extender on loopback")
		}
	}
}
