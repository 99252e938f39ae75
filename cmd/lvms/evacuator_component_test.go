package main

import (
	"net"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestEvacuatorComponent checks that the component runs what the code serves: `lvms evacuator` from
// the operator's image with arguments its flags accept, its probes on the port it serves them on,
// under its own service account.
func TestEvacuatorComponent(t *testing.T) {
	objs := buildWithComponent(t, "evacuator")
	var op, ev appsv1.Deployment
	findObject(t, objs, "Deployment", "lvms-operator", &op)
	findObject(t, objs, "Deployment", "lvms-evacuator", &ev)
	pod := ev.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != op.Spec.Template.Spec.Containers[0].Image {
		t.Errorf("evacuator image %q, operator's %q", c.Image, op.Spec.Template.Spec.Containers[0].Image)
	}
	if len(c.Args) == 0 || c.Args[0] != "evacuator" {
		t.Fatalf("args %v do not run lvms evacuator", c.Args)
	}
	cmd := newEvacuatorCommand()
	if err := cmd.ParseFlags(c.Args[1:]); err != nil {
		t.Errorf("lvms evacuator refuses the component's args %v: %v", c.Args, err)
	}
	f := &evacuatorFlags{labels: []string{}}
	if _, err := f.triggers(); err == nil {
		t.Error("no trigger is accepted")
	}
	_, port, err := net.SplitHostPort(cmd.Flags().Lookup("health-probe-bind-address").Value.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{c.LivenessProbe.HTTPGet.Port.String(), c.ReadinessProbe.HTTPGet.Port.String()} {
		if p != "probes" {
			t.Errorf("probe port %s, want the named port probes", p)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "probes" || strconv.Itoa(int(c.Ports[0].ContainerPort)) != port {
		t.Errorf("ports %+v, the probes are served on %s", c.Ports, port)
	}
	if pod.ServiceAccountName != "lvms-evacuator" {
		t.Errorf("service account %q", pod.ServiceAccountName)
	}
}
