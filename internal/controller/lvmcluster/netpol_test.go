package lvmcluster

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// configObjects reads the objects of the YAML files under config/.
func configObjects(t *testing.T, files ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "config", f))
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) > 0 {
				out = append(out, u)
			}
		}
	}
	return out
}

// configTyped returns the objects of kind in objs as T.
func configTyped[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) []*T {
	t.Helper()
	var out []*T
	for _, u := range objs {
		if u.GetKind() != kind {
			continue
		}
		v := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// admits reports whether policies let a peer with peerLabels (nil: a client outside the namespace's
// pods, such as the API server or a scraper) reach port of a pod with podLabels. A pod no policy
// selects admits everything.
func admits(t *testing.T, policies []*networkingv1.NetworkPolicy, podLabels, peerLabels map[string]string,
	port int32) (selected, admitted bool) {
	t.Helper()
	matches := func(s *metav1.LabelSelector, l map[string]string) bool {
		sel, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		return sel.Matches(labels.Set(l))
	}
	for _, p := range policies {
		if !matches(&p.Spec.PodSelector, podLabels) {
			continue
		}
		selected = true
		for _, r := range p.Spec.Ingress {
			portOK := len(r.Ports) == 0
			for _, rp := range r.Ports {
				tcp := rp.Protocol == nil || *rp.Protocol == corev1.ProtocolTCP
				portOK = portOK || (tcp && rp.Port != nil && rp.Port.IntVal == port)
			}
			peerOK := len(r.From) == 0
			for _, f := range r.From {
				peerOK = peerOK || (peerLabels != nil && f.PodSelector != nil && f.NamespaceSelector == nil &&
					f.IPBlock == nil && matches(f.PodSelector, peerLabels))
			}
			admitted = admitted || (portOK && peerOK)
		}
	}
	return selected, admitted || !selected
}

// TestNetworkPoliciesAdmitWhatEachPodServes: the NetworkPolicies of config/ select every pod of the
// product (the operator and evacuator Deployments of config/, the node agent DaemonSet and the
// snapshot metadata Deployment the operator makes) and admit each port a container declares, from
// anyone for the webhook, metrics, probes and the snapshot metadata service, and only from the
// node agents (transfers) or the snapshot metadata proxy (the agents' snapshot metadata port): a
// port added to a pod without its policy fails here.
func TestNetworkPoliciesAdmitWhatEachPodServes(t *testing.T) {
	objs := configObjects(t, "network-policy/operator.yaml", "network-policy/node.yaml",
		"components/snapshot-metadata/snapshot_metadata.yaml", "components/evacuator/evacuator.yaml",
		"manager/manager.yaml")
	policies := configTyped[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy")
	deployments := configTyped[appsv1.Deployment](t, objs, "Deployment")
	opts := Options{Namespace: "lvms-system", NodeImage: "lvms", SnapshotMetadata: true,
		SnapshotMetadataSidecarImage: DefaultSnapshotMetadataSidecarImage}
	node := nodeDaemonSet(t, opts).Spec.Template
	snapmeta := snapshotMetadataDeployment(t, opts).Spec.Template
	pods := map[string]corev1.PodTemplateSpec{NodeDaemonSetName: node, SnapshotMetadataName: snapmeta}
	for _, d := range deployments {
		pods[d.Name] = d.Spec.Template
	}
	if len(pods) != 4 {
		t.Fatalf("pods %d, want the operator, evacuator, node agent and snapshot metadata", len(pods))
	}
	// Ports only some peers may reach; every other declared port is open to all.
	restricted := map[int32]map[string]string{
		TransferPort:             node.Labels,
		SnapshotMetadataNodePort: snapmeta.Labels,
	}
	stranger := map[string]string{"app.kubernetes.io/name": "someone-else"}
	for name, pod := range pods {
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				peer, only := restricted[p.ContainerPort]
				if !only {
					peer = nil
				}
				selected, ok := admits(t, policies, pod.Labels, peer, p.ContainerPort)
				if !selected {
					t.Errorf("%s: no NetworkPolicy selects its pods (labels %v)", name, pod.Labels)
				}
				if !ok {
					t.Errorf("%s: port %d (%s of %s) is not admitted from %v", name, p.ContainerPort, p.Name,
						c.Name, peer)
				}
				if _, open := admits(t, policies, pod.Labels, stranger, p.ContainerPort); only && open {
					t.Errorf("%s: port %d (%s) is open to any pod; want only %v", name, p.ContainerPort, p.Name, peer)
				}
			}
		}
		if _, open := admits(t, policies, pod.Labels, nil, 1234); open {
			t.Errorf("%s: a port no container declares is admitted", name)
		}
	}
}
