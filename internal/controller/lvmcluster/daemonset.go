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

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// Host paths the node agent needs.
const (
	kubeletDir        = "/var/lib/kubelet"
	pluginDir         = kubeletDir + "/plugins/" + driver.Name
	registrationDir   = kubeletDir + "/plugins_registry"
	csiSocketInPod    = "/run/topolvm/csi-topolvm.sock"
	csiSocketDirInPod = "/run/topolvm"
)

// Ports of the node agent container; the operator serves its metrics on the same port.
// Service lvms-node-metrics (config/metrics) targets it by its name.
const (
	nodeHealthzPort     = 9808
	nodeMetricsPort     = 8443
	nodeMetricsPortName = "metrics"
)

// nodeAffinityFor is the union of the device classes' node selectors: a node that any device class
// selects runs the node agent. nil when some device class selects every node.
func nodeAffinityFor(c *lvmv1alpha1.LVMCluster) *corev1ac.AffinityApplyConfiguration {
	sel := corev1ac.NodeSelector()
	for _, dc := range c.Spec.Storage.DeviceClasses {
		if dc.NodeSelector == nil || len(dc.NodeSelector.NodeSelectorTerms) == 0 {
			return nil
		}
		for _, t := range dc.NodeSelector.NodeSelectorTerms {
			sel.WithNodeSelectorTerms(nodeSelectorTerm(t))
		}
	}
	return corev1ac.Affinity().WithNodeAffinity(
		corev1ac.NodeAffinity().WithRequiredDuringSchedulingIgnoredDuringExecution(sel))
}

func nodeSelectorTerm(t corev1.NodeSelectorTerm) *corev1ac.NodeSelectorTermApplyConfiguration {
	term := corev1ac.NodeSelectorTerm()
	for _, r := range t.MatchExpressions {
		term.WithMatchExpressions(corev1ac.NodeSelectorRequirement().
			WithKey(r.Key).WithOperator(r.Operator).WithValues(r.Values...))
	}
	for _, r := range t.MatchFields {
		term.WithMatchFields(corev1ac.NodeSelectorRequirement().
			WithKey(r.Key).WithOperator(r.Operator).WithValues(r.Values...))
	}
	return term
}

func tolerationsFor(c *lvmv1alpha1.LVMCluster) []*corev1ac.TolerationApplyConfiguration {
	out := make([]*corev1ac.TolerationApplyConfiguration, 0, len(c.Spec.Tolerations))
	for _, t := range c.Spec.Tolerations {
		ac := corev1ac.Toleration().WithKey(t.Key).WithOperator(t.Operator).WithValue(t.Value).WithEffect(t.Effect)
		if t.TolerationSeconds != nil {
			ac.WithTolerationSeconds(*t.TolerationSeconds)
		}
		out = append(out, ac)
	}
	return out
}

func hostPathVolume(name, path string, typ corev1.HostPathType) *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().WithName(name).WithHostPath(corev1ac.HostPathVolumeSource().WithPath(path).WithType(typ))
}

func mount(name, path string) *corev1ac.VolumeMountApplyConfiguration {
	return corev1ac.VolumeMount().WithName(name).WithMountPath(path)
}

// nodeArgs are the arguments of the node agent's container; c's spec.transfer.bandwidth caps its
// copies.
func nodeArgs(c *lvmv1alpha1.LVMCluster, opts Options) []string {
	args := []string{
		"node", "--node-name=$(NODE_NAME)", "--namespace=$(POD_NAMESPACE)", "--csi-socket=" + csiSocketInPod,
		fmt.Sprintf("--metrics-bind-address=:%d", nodeMetricsPort), "--cluster-id=" + opts.ClusterID,
		fmt.Sprintf("--transfer-address=:%d", TransferPort),
	}
	if t := c.Spec.Transfer; t != nil && t.Bandwidth != nil && !t.Bandwidth.IsZero() {
		args = append(args, "--transfer-bandwidth="+t.Bandwidth.String())
	}
	if opts.Profiling {
		args = append(args, "--profiling")
	}
	args = append(args, opts.TLSArgs...)
	if opts.LogLevel != "" {
		args = append(args, "--zap-log-level="+opts.LogLevel)
	}
	return args
}

// nodeDaemonSetFor is the node agent DaemonSet: `lvms node`, privileged with host PID (it runs host
// commands through nsenter), kubelet plugin registration and health served in process unless
// sidecar images are configured.
func nodeDaemonSetFor(c *lvmv1alpha1.LVMCluster, opts Options) *appsv1ac.DaemonSetApplyConfiguration {
	selector := map[string]string{"app.kubernetes.io/name": NodeDaemonSetName}
	bidirectional := corev1.MountPropagationBidirectional
	agent := corev1ac.Container().WithName("node").WithImage(opts.NodeImage).
		WithImagePullPolicy(opts.ImagePullPolicy).
		WithArgs(nodeArgs(c, opts)...).
		WithEnv(
			corev1ac.EnvVar().WithName("NODE_NAME").WithValueFrom(corev1ac.EnvVarSource().
				WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("spec.nodeName"))),
			corev1ac.EnvVar().WithName("POD_NAMESPACE").WithValueFrom(corev1ac.EnvVarSource().
				WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.namespace"))),
			// For `lvms disks --volume-group` run in this container (its --cluster-id default).
			corev1ac.EnvVar().WithName("LVMS_CLUSTER_ID").WithValue(opts.ClusterID),
		).
		WithSecurityContext(corev1ac.SecurityContext().WithPrivileged(true).WithRunAsUser(0)).
		WithResources(corev1ac.ResourceRequirements().WithRequests(corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
		})).
		WithPorts(
			corev1ac.ContainerPort().WithName("healthz").WithContainerPort(nodeHealthzPort),
			corev1ac.ContainerPort().WithName(nodeMetricsPortName).WithContainerPort(nodeMetricsPort),
			corev1ac.ContainerPort().WithName("transfer").WithContainerPort(TransferPort),
		).
		// A busy node answers slowly, and liveness starts only once the agent served once. The
		// startup probe asks every second (for up to 5 min), so the pod is Ready within a second
		// of the agent serving (at 5 s it waited 4 s more, 2026-11-26 with 1,000 LVs); the kubelet
		// runs one probe at a time, so a slow answer only spaces them out. Liveness restarts the
		// agent only after about 2.5 min without an answer within 10 s: with 5 s and 3 failures,
		// two agents were killed while their nodes started 40 pods each (2026-11-26, 200 claims).
		WithStartupProbe(corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/healthz").
			WithPort(
				intstr.FromString("healthz"),
			)).WithPeriodSeconds(1).WithTimeoutSeconds(5).WithFailureThreshold(300)).
		WithLivenessProbe(corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/healthz").
			WithPort(
				intstr.FromString("healthz"),
			)).WithPeriodSeconds(30).WithTimeoutSeconds(10).WithFailureThreshold(5)).
		WithVolumeMounts(
			mount("csi-socket-dir", csiSocketDirInPod),
			mount("registration-dir", registrationDir),
			mount("pod-volumes-dir", kubeletDir+"/pods").WithMountPropagation(bidirectional),
			mount("plugin-dir", kubeletDir+"/plugins").WithMountPropagation(bidirectional),
			mount("devices", "/dev"),
		)
	pod := corev1ac.PodSpec().
		WithServiceAccountName(NodeServiceAccountName).
		WithHostPID(true).
		// A stopping agent lets the host commands it started finish (exec.Host.FinishOnCancel),
		// each within its deadline: a rollout or drain must not SIGKILL an lvcreate or dd half-way.
		WithTerminationGracePeriodSeconds(NodeTerminationGracePeriodSeconds).
		WithPriorityClassName("system-node-critical").
		WithTolerations(tolerationsFor(c)...).
		WithContainers(agent).
		WithVolumes(
			hostPathVolume("csi-socket-dir", pluginDir+"/node", corev1.HostPathDirectoryOrCreate),
			hostPathVolume("registration-dir", registrationDir, corev1.HostPathDirectory),
			hostPathVolume("pod-volumes-dir", kubeletDir+"/pods", corev1.HostPathDirectoryOrCreate),
			hostPathVolume("plugin-dir", kubeletDir+"/plugins", corev1.HostPathDirectory),
			hostPathVolume("devices", "/dev", corev1.HostPathDirectory),
		)
	if a := nodeAffinityFor(c); a != nil {
		pod.WithAffinity(a)
	}
	addSidecars(pod, opts)
	addSnapshotMetadata(pod, opts)
	return appsv1ac.DaemonSet(NodeDaemonSetName, opts.Namespace).
		WithLabels(ownerLabels(c)).
		WithOwnerReferences(controllerRef(c)).
		WithSpec(appsv1ac.DaemonSetSpec().
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector)).
			WithUpdateStrategy(appsv1ac.DaemonSetUpdateStrategy().WithType(appsv1.RollingUpdateDaemonSetStrategyType)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(withLabels(selector, ownerLabels(c))).
				WithSpec(pod)))
}

// addSidecars adds node-driver-registrar and livenessprobe when their images are configured.
func addSidecars(pod *corev1ac.PodSpecApplyConfiguration, opts Options) {
	if opts.RegistrarImage != "" {
		// The sidecar registers with kubelet; the agent must not serve registration too.
		pod.Containers[0].WithArgs("--registration-socket=")
		pod.WithContainers(corev1ac.Container().WithName("csi-registrar").WithImage(opts.RegistrarImage).
			WithArgs("--csi-address="+csiSocketInPod,
				"--kubelet-registration-path="+pluginDir+"/node/csi-topolvm.sock").
			WithVolumeMounts(mount("csi-socket-dir", csiSocketDirInPod), mount("registration-dir", "/registration")))
	}
	if opts.LivenessProbeImage != "" {
		pod.WithContainers(corev1ac.Container().WithName("liveness-probe").WithImage(opts.LivenessProbeImage).
			WithArgs("--csi-address="+csiSocketInPod, "--http-endpoint=:9809").
			WithVolumeMounts(mount("csi-socket-dir", csiSocketDirInPod)))
	}
}

func controllerRef(c *lvmv1alpha1.LVMCluster) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(lvmv1alpha1.GroupVersion.String()).WithKind("LVMCluster").
		WithName(c.Name).WithUID(c.UID).WithController(true).WithBlockOwnerDeletion(true)
}

func applyNodeDaemonSet(ctx context.Context, s *scope) error {
	if err := applyOperand(ctx, s.client, nodeDaemonSetFor(s.cluster, s.opts)); err != nil {
		return fmt.Errorf("apply DaemonSet %s/%s: %w", s.opts.Namespace, NodeDaemonSetName, err)
	}
	return nil
}

func removeNodeDaemonSet(ctx context.Context, s *scope) (bool, error) {
	ds := &appsv1.DaemonSet{}
	ds.Name, ds.Namespace = NodeDaemonSetName, s.opts.Namespace
	return deleteObject(ctx, s.client, ds)
}
