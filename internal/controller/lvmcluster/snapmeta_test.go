package lvmcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// snapshotMetadataDeployment renders snapshotMetadataDeploymentFor as the API object.
func snapshotMetadataDeployment(t *testing.T, opts Options) *appsv1.Deployment {
	t.Helper()
	return rendered[appsv1.Deployment](t, snapshotMetadataDeploymentFor(testCluster(), opts))
}

// TestSnapshotMetadataDeployment checks the endpoint the operator runs: the proxy runs `lvms
// snapshot-metadata` from the node agent's image with the certificates the operator issues, the
// sidecar talks to it over a shared socket and serves TLS on the port of the SnapshotMetadataService
// address, as the ServiceAccount the install brings, unprivileged, owned by the LVMCluster.
func TestSnapshotMetadataDeployment(t *testing.T) {
	d := snapshotMetadataDeployment(t, Options{Namespace: "lvms-system", NodeImage: "lvms@sha256:1",
		ImagePullPolicy: corev1.PullIfNotPresent, SnapshotMetadataSidecarImage: DefaultSnapshotMetadataSidecarImage})
	if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].Kind != "LVMCluster" || d.Namespace != "lvms-system" {
		t.Errorf("owner %+v in %q, want the LVMCluster in lvms-system", d.OwnerReferences, d.Namespace)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != SnapshotMetadataName || pod.SecurityContext == nil ||
		pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("pod service account %q, security context %+v", pod.ServiceAccountName, pod.SecurityContext)
	}
	proxy, sidecar := containerNamed(t, &pod, "proxy"), containerNamed(t, &pod, "csi-snapshot-metadata")
	wantArgs := []string{"snapshot-metadata", "--csi-address=/csi/csi.sock", "--cert-dir=/certs/node-client",
		"--namespace=$(POD_NAMESPACE)", "--node-port=9820"}
	if proxy.Image != "lvms@sha256:1" || !slices.Equal(proxy.Args, wantArgs) {
		t.Errorf("proxy %s %q, want the node image with %q", proxy.Image, proxy.Args, wantArgs)
	}
	if len(proxy.Env) != 1 || proxy.Env[0].Name != "POD_NAMESPACE" || proxy.Env[0].ValueFrom == nil ||
		proxy.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("proxy env %+v, want POD_NAMESPACE from metadata.namespace", proxy.Env)
	}
	wantSidecar := []string{"--csi-address=/csi/csi.sock", "--tls-cert=/certs/server/tls.crt",
		"--tls-key=/certs/server/tls.key", "--port=6443"}
	if sidecar.Image != DefaultSnapshotMetadataSidecarImage || !slices.Equal(sidecar.Args, wantSidecar) ||
		len(sidecar.Ports) != 1 || sidecar.Ports[0].Name != "grpc" || sidecar.Ports[0].ContainerPort != 6443 {
		t.Errorf("sidecar %s %q ports %+v", sidecar.Image, sidecar.Args, sidecar.Ports)
	}
	for _, c := range []*corev1.Container{proxy, sidecar} {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil ||
			!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("%s security context %+v, want no privileges and a read-only root", c.Name, sc)
		}
	}
	checkSnapshotMetadataVolumes(t, &pod, proxy, sidecar)
}

// checkSnapshotMetadataVolumes: proxy and sidecar share an emptyDir socket directory; the proxy's
// certificate directory holds its client key pair and the node agents' CA, the sidecar's its
// serving key pair; no Secret is optional (the pod waits for the operator to issue them).
func checkSnapshotMetadataVolumes(t *testing.T, pod *corev1.PodSpec, proxy, sidecar *corev1.Container) {
	t.Helper()
	mounts := map[string]string{}
	for _, c := range []*corev1.Container{proxy, sidecar} {
		for _, m := range c.VolumeMounts {
			mounts[c.Name+" "+m.MountPath] = m.Name
		}
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	if mounts["proxy /csi"] == "" || mounts["proxy /csi"] != mounts["csi-snapshot-metadata /csi"] ||
		volumes[mounts["proxy /csi"]].EmptyDir == nil {
		t.Errorf("proxy and sidecar do not share an emptyDir at /csi: mounts %v", mounts)
	}
	certs := map[string]string{}
	if p := volumes[mounts["proxy /certs/node-client"]].Projected; p != nil {
		for _, s := range p.Sources {
			if s.Secret == nil || s.Secret.Optional != nil && *s.Secret.Optional {
				t.Errorf("projected source %+v: want a Secret that is not optional", s)
				continue
			}
			for _, it := range s.Secret.Items {
				certs[it.Path] = s.Secret.Name + "/" + it.Key
			}
		}
	}
	want := map[string]string{"tls.crt": SnapshotMetadataClientCert + "/tls.crt",
		"tls.key": SnapshotMetadataClientCert + "/tls.key", "ca.crt": SnapshotMetadataNodeCert + "/ca.crt"}
	if len(certs) != len(want) {
		t.Errorf("proxy certificate files %v, want %v", certs, want)
	}
	for path, src := range want {
		if certs[path] != src {
			t.Errorf("proxy certificate file %s from %q, want %q", path, certs[path], src)
		}
	}
	server := volumes[mounts["csi-snapshot-metadata /certs/server"]].Secret
	if server == nil || server.SecretName != SnapshotMetadataServerCert || server.Optional != nil && *server.Optional {
		t.Errorf("sidecar certificate volume %+v, want Secret %s, not optional", server, SnapshotMetadataServerCert)
	}
}

// TestSnapshotMetadataInstall checks the Deployment against what the install brings for it
// (config/components/snapshot-metadata): its ServiceAccount, and the Service that selects its pod
// and forwards the SnapshotMetadataService's port to the sidecar's named port.
func TestSnapshotMetadataInstall(t *testing.T) {
	d := snapshotMetadataDeployment(t, Options{Namespace: "lvms-system", NodeImage: "lvms",
		SnapshotMetadataSidecarImage: DefaultSnapshotMetadataSidecarImage})
	b, err := os.ReadFile(
		filepath.Join("..", "..", "..", "config", "components", "snapshot-metadata", "snapshot_metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var svc *corev1.Service
	sa := false
	for doc := range bytes.SplitSeq(b, []byte("\n---\n")) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "ServiceAccount":
			var a corev1.ServiceAccount
			if err := yaml.Unmarshal(doc, &a); err != nil {
				t.Fatal(err)
			}
			sa = sa || a.Name == d.Spec.Template.Spec.ServiceAccountName
		case "Service":
			svc = &corev1.Service{}
			if err := yaml.Unmarshal(doc, svc); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !sa || svc == nil || svc.Name != SnapshotMetadataName {
		t.Fatalf("the component lacks the ServiceAccount (%t) or the Service %s (%+v)", sa, SnapshotMetadataName, svc)
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf(
				"Service selector %v does not select the pod (labels %v)",
				svc.Spec.Selector,
				d.Spec.Template.Labels,
			)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != SnapshotMetadataPort ||
		svc.Spec.Ports[0].TargetPort.String() != "grpc" {
		t.Errorf("Service ports %+v, want %d -> grpc", svc.Spec.Ports, SnapshotMetadataPort)
	}
}

// TestSnapshotMetadataOnOff applies the unit with and without SnapshotMetadata: on, the Deployment
// exists; off, the operator's Deployment is deleted and one of the same name that is not the
// operator's stays.
func TestSnapshotMetadataOnOff(t *testing.T) {
	ctx := t.Context()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := lvmv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := &lvmv1alpha1.LVMCluster{}
	c.Name, c.Namespace, c.UID = "my-lvmcluster", "lvms-system", "uid-1"
	cl := withUIDs(fake.NewClientBuilder().WithScheme(s).WithObjects(c))
	sc := &scope{client: cl, cluster: c, opts: Options{Namespace: "lvms-system", NodeImage: "lvms",
		SnapshotMetadata: true, SnapshotMetadataSidecarImage: DefaultSnapshotMetadataSidecarImage}}
	key := client.ObjectKey{Namespace: "lvms-system", Name: SnapshotMetadataName}
	if err := applySnapshotMetadata(ctx, sc); err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := cl.Get(ctx, key, &d); err != nil {
		t.Fatalf("on: %v", err)
	}
	sc.opts.SnapshotMetadata = false
	if err := applySnapshotMetadata(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(ctx, key, &d); !apierrors.IsNotFound(err) {
		t.Fatalf("off: the operator's Deployment is still there (%v)", err)
	}
	theirs := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := cl.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	if err := applySnapshotMetadata(ctx, sc); err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(ctx, key, &d); err != nil {
		t.Fatalf("off: a Deployment that is not the operator's was deleted (%v)", err)
	}
}
