package devcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// fakeBridge stands in for a node's bridge where a test only routes to it.
type fakeBridge struct{ node int }

func (f *fakeBridge) Dial(context.Context, string) (net.Conn, error) {
	return nil, fmt.Errorf("node %d: not dialed in this test", f.node)
}

func TestEgressRoute(t *testing.T) {
	p := &egressProxy{sessions: map[int]nodeBridge{0: &fakeBridge{node: 0}, 1: &fakeBridge{node: 1}}}
	for _, tc := range []struct {
		target, dial string
		node         int
		err          string
	}{
		{target: "10.100.0.1:10250", dial: "127.0.0.1:10250", node: 0},
		{target: "10.100.0.2:10250", dial: "127.0.0.1:10250", node: 1},
		{target: "10.244.2.7:9443", dial: "10.244.2.7:9443", node: 1},
		{target: "10.100.0.3:10250", err: "no bridge to node 2"},
		{target: "192.0.2.1:443", err: "neither a node nor a pod address"},
		{target: "lvms-webhook-service.lvms-system.svc:443", err: "not an IP address"},
		{target: "10.100.0.1", err: "missing port"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			s, dial, err := p.route(tc.target)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("route(%s) error %v, want %q", tc.target, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s != p.sessions[tc.node] || dial != tc.dial {
				t.Errorf("route(%s) = node session %p, %s; want node %d, %s", tc.target, s, dial, tc.node, tc.dial)
			}
		})
	}
}

func TestRealNodeFiles(t *testing.T) {
	l := Layout{Dir: t.TempDir()}
	if err := writeRealNodeFiles(l, 1, "node-1", 64); err != nil {
		t.Fatal(err)
	}
	var kubelet map[string]any
	b, err := os.ReadFile(filepath.Join(l.NodeDir("node-1"), nodeKubeletConfig))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &kubelet); err != nil {
		t.Fatalf("kubelet config is not YAML: %v", err)
	}
	for key, want := range map[string]any{
		"cgroupDriver": "cgroupfs", "podCIDR": "10.244.2.0/24", "imageGCHighThresholdPercent": float64(100),
		"maxPods": float64(64),
	} {
		if kubelet[key] != want {
			t.Errorf("kubelet config %s = %v, want %v", key, kubelet[key], want)
		}
	}
	var cni map[string]any
	b, err = os.ReadFile(filepath.Join(l.NodeDir("node-1"), nodeCNIDir, "10-lvms-dev.conflist"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &cni); err != nil || !strings.Contains(string(b), `"subnet": "10.244.2.0/24"`) {
		t.Errorf("CNI config %s: %v", b, err)
	}
	b, err = os.ReadFile(filepath.Join(l.NodeDir("node-1"), nodeContainerdConfig))
	if err != nil || !strings.Contains(string(b), `sandbox_image = "`+SandboxImage+`"`) {
		t.Errorf("containerd config %s: %v", b, err)
	}
}

func TestWebhooksWithoutCA(t *testing.T) {
	svc := func(ns string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "w"},
		}
	}
	withCA := svc(Namespace)
	withCA.CABundle = []byte("ca")
	cfgs := []admissionregistrationv1.ValidatingWebhookConfiguration{
		{
			Webhooks: []admissionregistrationv1.ValidatingWebhook{
				{Name: "a", ClientConfig: svc(Namespace)},
				{Name: "b", ClientConfig: withCA},
			},
		},
		{
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "other", ClientConfig: svc("kube-system")}},
		},
	}
	cfgs[0].Name = "lvms"
	mutating := []admissionregistrationv1.MutatingWebhookConfiguration{
		{
			Webhooks: []admissionregistrationv1.MutatingWebhook{
				{Name: "m", ClientConfig: svc(Namespace)},
				{Name: "n", ClientConfig: withCA},
			},
		},
	}
	mutating[0].Name = "lvms-m"
	want := []string{"lvms/a", "lvms-m/m"}
	if got := WebhooksWithoutCA(cfgs, mutating); !slices.Equal(got, want) {
		t.Errorf("WebhooksWithoutCA = %v, want %v", got, want)
	}
}
