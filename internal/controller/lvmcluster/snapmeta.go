package lvmcluster

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// Changed block tracking (docs/changed-blocks.md): with Options.SnapshotMetadata the node agents
// serve their SnapshotMetadata endpoint and the operator runs the driver's endpoint for backup
// clients, the Deployment SnapshotMetadataName. Its ServiceAccount, RBAC and Service come with the
// install (config/components/snapshot-metadata, the Helm value snapshotMetadata.enabled, the OLM
// bundle); the certificates are the operator's.
const (
	// SnapshotMetadataName names the Deployment, its ServiceAccount and its Service.
	SnapshotMetadataName = "lvms-snapshot-metadata"
	// SnapshotMetadataPort is the sidecar's TLS port, the Service's and the address's port.
	SnapshotMetadataPort = 6443
	// DefaultSnapshotMetadataSidecarImage is the upstream external-snapshot-metadata sidecar.
	DefaultSnapshotMetadataSidecarImage = "registry.k8s.io/sig-storage/csi-snapshot-metadata:v0.2.0"
)

// snapshotMetadataCertDir is where the node agent finds its snapshot metadata certificates.
const snapshotMetadataCertDir = "/etc/lvms/snapshot-metadata"

// addSnapshotMetadata makes the agent serve its SnapshotMetadata endpoint: the port, and a projected
// volume of its serving key pair with the CA of the proxy's client certificates (never a CA key).
// The pod starts once the operator has issued both Secrets.
func addSnapshotMetadata(pod *corev1ac.PodSpecApplyConfiguration, opts Options) {
	if !opts.SnapshotMetadata {
		return
	}
	pod.Containers[0].WithArgs(
		fmt.Sprintf("--snapshot-metadata-address=:%d", SnapshotMetadataNodePort),
		"--snapshot-metadata-cert-dir="+snapshotMetadataCertDir,
	).WithPorts(corev1ac.ContainerPort().WithName("snapmeta").WithContainerPort(SnapshotMetadataNodePort)).
		WithVolumeMounts(mount("snapshot-metadata-certs", snapshotMetadataCertDir).WithReadOnly(true))
	pod.WithVolumes(corev1ac.Volume().WithName("snapshot-metadata-certs").WithProjected(
		corev1ac.ProjectedVolumeSource().WithSources(
			secretItems(SnapshotMetadataNodeCert, "tls.crt", "tls.key"),
			secretItems(SnapshotMetadataClientCert, "ca.crt"),
		)))
}

// secretItems projects the keys of a Secret under their own names.
func secretItems(secret string, keys ...string) *corev1ac.VolumeProjectionApplyConfiguration {
	p := corev1ac.SecretProjection().WithName(secret)
	for _, k := range keys {
		p.WithItems(corev1ac.KeyToPath().WithKey(k).WithPath(k))
	}
	return corev1ac.VolumeProjection().WithSecret(p)
}

// restricted is the security context of both containers: no privileges, read-only root.
func restricted() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).WithReadOnlyRootFilesystem(true)
}

// smallRequests are the containers' requests.
func smallRequests() *corev1ac.ResourceRequirementsApplyConfiguration {
	return corev1ac.ResourceRequirements().WithRequests(corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
	})
}

// snapshotMetadataDeploymentFor is the driver's SnapshotMetadata endpoint: two containers sharing a
// unix socket. csi-snapshot-metadata (upstream sidecar) serves backup clients over TLS on
// SnapshotMetadataPort, authenticates their tokens, authorises them on the VolumeSnapshots and calls
// the driver on the socket; proxy (`lvms snapshot-metadata`, the operator's image) serves CSI
// Identity and SnapshotMetadata there and forwards each call to the node agent that holds the
// snapshot's thin pool (pod IP:SnapshotMetadataNodePort, mutual TLS with the operator's CAs).
func snapshotMetadataDeploymentFor(c *lvmv1alpha1.LVMCluster, opts Options) *appsv1ac.DeploymentApplyConfiguration {
	selector := map[string]string{"app.kubernetes.io/name": SnapshotMetadataName}
	proxy := corev1ac.Container().WithName("proxy").WithImage(opts.NodeImage).WithImagePullPolicy(opts.ImagePullPolicy).
		WithArgs("snapshot-metadata", "--csi-address=/csi/csi.sock", "--cert-dir=/certs/node-client",
			"--namespace=$(POD_NAMESPACE)", fmt.Sprintf("--node-port=%d", SnapshotMetadataNodePort)).
		WithEnv(corev1ac.EnvVar().WithName("POD_NAMESPACE").WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.namespace")))).
		WithResources(smallRequests()).WithSecurityContext(restricted()).
		WithVolumeMounts(
			mount("socket-dir", "/csi"),
			mount("node-client-cert", "/certs/node-client").WithReadOnly(true),
		)
	sidecar := corev1ac.Container().WithName("csi-snapshot-metadata").WithImage(opts.SnapshotMetadataSidecarImage).
		WithArgs("--csi-address=/csi/csi.sock", "--tls-cert=/certs/server/tls.crt", "--tls-key=/certs/server/tls.key",
			fmt.Sprintf("--port=%d", SnapshotMetadataPort)).
		WithPorts(corev1ac.ContainerPort().WithName("grpc").WithContainerPort(SnapshotMetadataPort)).
		// The sidecar listens once the driver on the socket answered GetPluginInfo.
		WithReadinessProbe(corev1ac.Probe().WithTCPSocket(corev1ac.TCPSocketAction().
			WithPort(intstr.FromString("grpc"))).WithTimeoutSeconds(5)).
		WithResources(smallRequests()).WithSecurityContext(restricted()).
		WithVolumeMounts(mount("socket-dir", "/csi"), mount("server-cert", "/certs/server").WithReadOnly(true))
	pod := corev1ac.PodSpec().WithServiceAccountName(SnapshotMetadataName).
		WithSecurityContext(corev1ac.PodSecurityContext().WithRunAsNonRoot(true).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithContainers(proxy, sidecar).
		WithVolumes(
			corev1ac.Volume().WithName("socket-dir").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
			// The proxy's client certificate and the CA of the node agents' serving certificates.
			// Not optional: the kubelet waits for the operator to issue them.
			corev1ac.Volume().WithName("node-client-cert").WithProjected(corev1ac.ProjectedVolumeSource().WithSources(
				secretItems(SnapshotMetadataClientCert, "tls.crt", "tls.key"),
				secretItems(SnapshotMetadataNodeCert, "ca.crt"),
			)),
			// The sidecar's serving certificate (DNS <name>.<namespace>[.svc]); its CA is the
			// caCert of the SnapshotMetadataService.
			corev1ac.Volume().WithName("server-cert").WithSecret(corev1ac.SecretVolumeSource().
				WithSecretName(SnapshotMetadataServerCert)),
		)
	return appsv1ac.Deployment(SnapshotMetadataName, opts.Namespace).
		WithLabels(withLabels(selector, ownerLabels(c))).
		WithOwnerReferences(controllerRef(c)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(withLabels(selector, ownerLabels(c))).
				WithSpec(pod)))
}

// applySnapshotMetadata applies the endpoint's Deployment with Options.SnapshotMetadata and removes
// it without.
func applySnapshotMetadata(ctx context.Context, s *scope) error {
	if !s.opts.SnapshotMetadata {
		_, err := removeSnapshotMetadata(ctx, s)
		return err
	}
	if err := applyOperand(ctx, s.client, snapshotMetadataDeploymentFor(s.cluster, s.opts)); err != nil {
		return fmt.Errorf("apply Deployment %s/%s: %w", s.opts.Namespace, SnapshotMetadataName, err)
	}
	return nil
}

// removeSnapshotMetadata deletes the endpoint's Deployment if the operator made it for this
// LVMCluster (it carries the LVMCluster's labels, as every operand does); one of the same name
// without them is someone else's and stays.
func removeSnapshotMetadata(ctx context.Context, s *scope) (bool, error) {
	return removeLabelled(&appsv1.DeploymentList{}, client.InNamespace(s.opts.Namespace))(ctx, s)
}
