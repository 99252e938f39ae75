package operator

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
	"github.com/lvm-operator/lvm-operator/internal/controller/noderemoval"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/tlsprofile"
	lvmswebhook "github.com/lvm-operator/lvm-operator/internal/webhook"
)

// Options configure the operator. AddFlags binds them to `lvms operator`'s flags; the fields
// without a flag are set by the caller.
type Options struct {
	// Namespace is the operator namespace: the LVMCluster and every operand live there.
	Namespace string
	// NodeImage is the node agent's image; empty means the image of the operator's own container,
	// read from the Pod PodName (OwnImage).
	NodeImage string
	// PodName is the operator's own Pod ($POD_NAME), read when NodeImage is empty.
	PodName string
	// NodeImagePullPolicy, RegistrarImage, LivenessProbeImage: see lvmcluster.Options.
	NodeImagePullPolicy                string
	RegistrarImage, LivenessProbeImage string
	// WebhookPort and WebhookHost are where the admission webhooks listen.
	WebhookPort int
	WebhookHost string
	// WebhookCertMode is "self" (the operator issues its certificate into WebhookSelfCertDir and
	// injects the CA into WebhookConfiguration and MutatingWebhookConfiguration) or "external"
	// (the files in WebhookCertDir come from elsewhere).
	WebhookCertMode                                    string
	WebhookCertDir, WebhookSelfCertDir, WebhookService string
	WebhookConfiguration, MutatingWebhookConfiguration string
	// PodMutatingWebhook serves TopoLVM's pod webhook for the scheduler extender.
	PodMutatingWebhook bool
	// CSISocket is where the CSI Identity and Controller services listen; empty runs none.
	CSISocket string
	// CrossNodeRestore places restores and clones on the node the scheduler selected, even another
	// than their source's, and has the node agents copy the data there (docs/mobility.md), whatever
	// the LVMClusters say; off (the default), an LVMCluster's spec.transfer.crossNode decides.
	CrossNodeRestore bool
	// ReleaseVolumes and DeleteClaims: see noderemoval.Options.
	ReleaseVolumes, DeleteClaims bool
	// SnapshotMetadata turns on changed block tracking; SnapshotMetadataSidecarImage is the
	// external-snapshot-metadata sidecar's image.
	SnapshotMetadata             bool
	SnapshotMetadataSidecarImage string
	// NodeAgentPolicy: the API server serves ValidatingAdmissionPolicy v1 and the manager's cache
	// holds the node agent policy (lvmcluster.NodeAgentPolicyCache). Found out once, at start
	// (lvmcluster.NodeAgentPolicyServed), as the cache must be set up before the manager exists.
	NodeAgentPolicy bool
	// Profiling, LogLevel and TLS are passed on to the node agents (the process's own settings); TLS
	// also holds for the webhook server.
	Profiling bool
	LogLevel  string
	TLS       tlsprofile.Profile
}

// Flag names and environment variables the install's other parts refer to.
const (
	// PodMutatingWebhookFlag turns on TopoLVM's pod webhook for the scheduler extender
	// (config/components/scheduler-extender adds it with the webhook's configuration).
	PodMutatingWebhookFlag = "pod-mutating-webhook"
	// SnapshotMetadataFlag turns on changed block tracking (config/components/snapshot-metadata
	// adds it with the sidecar's ServiceAccount, RBAC and Service); SnapshotMetadataEnv is its
	// default, which an OLM Subscription's spec.config.env sets. SnapshotMetadataSidecarImageEnv
	// overrides the sidecar's image (RELATED_IMAGE_ is OLM's convention for images a bundle lists).
	SnapshotMetadataFlag            = "snapshot-metadata"
	SnapshotMetadataEnv             = "LVMS_SNAPSHOT_METADATA"
	SnapshotMetadataSidecarImageEnv = "RELATED_IMAGE_SNAPSHOT_METADATA"
)

// AddFlags binds o to the operator's own flags, with their defaults (some from the environment).
// The process flags every component has (metrics, probes, leader election, logging, profiling)
// are the command's.
func (o *Options) AddFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.Namespace, "namespace", cmp.Or(os.Getenv("POD_NAMESPACE"), "lvms-system"),
		"operator namespace (LVMCluster, operands)")
	fl.StringVar(&o.NodeImage, "node-image", os.Getenv("LVMS_NODE_IMAGE"),
		"image of the node agent (lvms node); default: the image of this pod's operator container")
	fl.StringVar(&o.NodeImagePullPolicy, "node-image-pull-policy", string(corev1.PullIfNotPresent),
		"pull policy of the node agent image")
	fl.StringVar(&o.RegistrarImage, "node-driver-registrar-image", "",
		"add the node-driver-registrar sidecar (default: registration served in process)")
	fl.StringVar(&o.LivenessProbeImage, "livenessprobe-image", "",
		"add the livenessprobe sidecar (default: health served in process)")
	fl.BoolVar(&o.ReleaseVolumes, noderemoval.ReleaseVolumesFlag, false,
		"let LogicalVolumes of deleted Nodes finish deleting (their LVs, if the disks come back, are orphans)")
	fl.BoolVar(&o.DeleteClaims, noderemoval.DeleteClaimsFlag, false,
		"delete the PersistentVolumeClaims of topolvm.io volumes on deleted Nodes, so StatefulSets recreate "+
			"them on other nodes (with a Delete reclaim policy their volumes go too, even if the machine comes back)")
	fl.BoolVar(&o.PodMutatingWebhook, PodMutatingWebhookFlag, false,
		"serve TopoLVM's pod webhook at "+lvmswebhook.PodMutatorPath+": annotate pods with unbound topolvm.io claims "+
			"for the scheduler extender (lvms scheduler); needs its MutatingWebhookConfiguration")
	fl.BoolVar(&o.SnapshotMetadata, SnapshotMetadataFlag, os.Getenv(SnapshotMetadataEnv) == "true",
		"changed block tracking: issue the certificates of the node agents' snapshot metadata endpoints, of "+
			"`lvms snapshot-metadata` and of the external-snapshot-metadata sidecar, make the node agents serve, run "+
			"the sidecar's Deployment "+lvmcluster.SnapshotMetadataName+" and apply the SnapshotMetadataService "+
			driver.Name+" (needs that CRD; docs/changed-blocks.md); default: true if $"+SnapshotMetadataEnv+
			" is \"true\" (how an OLM Subscription turns it on)")
	fl.StringVar(&o.SnapshotMetadataSidecarImage, "snapshot-metadata-sidecar-image",
		cmp.Or(os.Getenv(SnapshotMetadataSidecarImageEnv), lvmcluster.DefaultSnapshotMetadataSidecarImage),
		"image of the external-snapshot-metadata sidecar (with --"+SnapshotMetadataFlag+")")
	o.addWebhookFlags(fl)
	fl.StringVar(&o.CSISocket, "csi-socket", "/run/topolvm/csi-topolvm.sock",
		"CSI Identity+Controller socket for the sidecars; empty disables the CSI controller")
	fl.BoolVar(&o.CrossNodeRestore, "cross-node-restore", false,
		"place restores and clones on the node the scheduler selected for their claim even when the source is on "+
			"another node: the node agents copy the data (docs/mobility.md); false leaves it to the LVMCluster's "+
			"spec.transfer.crossNode")
}

func (o *Options) addWebhookFlags(fl *pflag.FlagSet) {
	fl.IntVar(&o.WebhookPort, "webhook-port", 9443, "admission webhook port")
	fl.StringVar(&o.WebhookHost, "webhook-host", "", "admission webhook bind address (empty: all interfaces)")
	fl.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs",
		"webhook serving certificate directory")
	fl.StringVar(&o.WebhookSelfCertDir, "webhook-self-cert-dir", "/tmp/lvms-webhook-certs",
		"with --webhook-cert-mode=self: where the operator writes the certificate it issued and serves it from "+
			"(writable; --webhook-cert-dir is for external mode)")
	fl.StringVar(&o.WebhookCertMode, "webhook-cert-mode", "self",
		"self: the operator issues and rotates its own certificate and injects the CA; external: the files in "+
			"--webhook-cert-dir come from elsewhere (cert-manager)")
	fl.StringVar(&o.WebhookService, "webhook-service", "lvms-webhook-service",
		"name of the webhook Service (certificate DNS name)")
	fl.StringVar(&o.WebhookConfiguration, "webhook-configuration", "lvms-validating-webhook-configuration",
		"ValidatingWebhookConfiguration to inject the CA into")
	fl.StringVar(&o.MutatingWebhookConfiguration, "mutating-webhook-configuration",
		"lvms-mutating-webhook-configuration", "MutatingWebhookConfiguration to inject the CA into")
}

// Validate checks the settings that have a fixed set of values.
func (o Options) Validate() error {
	switch o.WebhookCertMode {
	case "self", "external":
	default:
		return fmt.Errorf("--webhook-cert-mode %q: use self or external", o.WebhookCertMode)
	}
	switch p := corev1.PullPolicy(o.NodeImagePullPolicy); p {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return fmt.Errorf("--node-image-pull-policy %q: use %s, %s or %s",
			p, corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)
	}
	return nil
}

// WebhookServer is the manager's webhook server: it reads its certificate from the operator's
// own copy of what it issued (self), or from the files that come from elsewhere (external).
func (o Options) WebhookServer() webhook.Server {
	dir := o.WebhookCertDir
	if o.WebhookCertMode == "self" {
		dir = o.WebhookSelfCertDir
	}
	return webhook.NewServer(webhook.Options{Host: o.WebhookHost, Port: o.WebhookPort, CertDir: dir,
		TLSOpts: []func(*tls.Config){o.TLS.Apply}})
}
