package operator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lvm-operator/lvm-operator/internal/controller/claimevents"
	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
	"github.com/lvm-operator/lvm-operator/internal/controller/noderemoval"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgcleanup"
	csicontroller "github.com/lvm-operator/lvm-operator/internal/csi/controller"
	lvmswebhook "github.com/lvm-operator/lvm-operator/internal/webhook"
)

// Setup adds the operator's controllers, metrics, CSI controller service, webhooks and probes to
// mgr. The manager's cache must hold the node agent policy when o.NodeAgentPolicy is set
// (lvmcluster.NodeAgentPolicyCache).
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.NodeImage == "" {
		image, err := OwnImage(ctx, mgr.GetAPIReader(), o.Namespace, o.PodName)
		if err != nil {
			return err
		}
		o.NodeImage = image
	}
	cluster, err := ClusterID(ctx, mgr.GetAPIReader())
	if err != nil {
		return err
	}
	certsReady, err := setupWebhookCerts(mgr, o)
	if err != nil {
		return err
	}
	if err := setupControllers(mgr, o, cluster); err != nil {
		return err
	}
	if err := setupTransfer(ctx, mgr, o); err != nil {
		return err
	}
	if o.CSISocket != "" {
		if err := csicontroller.AddToManager(
			ctx,
			mgr,
			o.CSISocket,
			crossNodePolicy(o.CrossNodeRestore, mgr.GetCache(), o.Namespace),
			o.Namespace,
		); err != nil {
			return err
		}
	}
	if o.SnapshotMetadata {
		if err := setupSnapshotMetadata(ctx, mgr, o); err != nil {
			return err
		}
	}
	// The webhooks serve only once their certificate exists; a failed registration ends mgr.Start.
	if err := mgr.Add(delayedSetup{ready: certsReady, what: "LVMCluster webhooks", setup: func() error {
		if o.PodMutatingWebhook {
			lvmswebhook.SetupPodMutator(mgr, podMutatorVolumeIndex(o))
		}
		return lvmswebhook.Setup(mgr, o.Namespace)
	}}); err != nil {
		return fmt.Errorf("add LVMCluster webhook setup: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", webhookReady(mgr, certsReady)); err != nil {
		return fmt.Errorf("add ready check: %w", err)
	}
	return nil
}

// setupControllers adds the LVMCluster controller and its metrics, the node-removal controller
// and the claim events controller.
func setupControllers(mgr ctrl.Manager, o Options, cluster string) error {
	r := lvmcluster.New(mgr.GetClient(), mgr.GetEventRecorder("lvms-operator"), lvmcluster.Options{
		Namespace: o.Namespace, NodeImage: o.NodeImage, ImagePullPolicy: corev1.PullPolicy(o.NodeImagePullPolicy),
		RegistrarImage: o.RegistrarImage, LivenessProbeImage: o.LivenessProbeImage, ClusterID: cluster,
		SnapshotMetadata: o.SnapshotMetadata, SnapshotMetadataSidecarImage: o.SnapshotMetadataSidecarImage,
		Profiling: o.Profiling, LogLevel: o.LogLevel, NodeAgentPolicy: o.NodeAgentPolicy, TLSArgs: o.TLS.Args(),
	})
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up LVMCluster controller: %w", err)
	}
	if err := ctrlmetrics.Registry.Register(lvmcluster.NewCollector(mgr.GetClient(), o.Namespace)); err != nil {
		return fmt.Errorf("register LVMCluster metrics: %w", err)
	}
	removal := noderemoval.New(mgr.GetClient(), o.Namespace, noderemoval.Options{
		ReleaseVolumes: o.ReleaseVolumes, DeleteClaims: o.DeleteClaims, APIReader: mgr.GetAPIReader(),
	})
	if err := removal.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up node-removal controller: %w", err)
	}
	if err := vgcleanup.New(mgr.GetClient(), mgr.GetAPIReader(), o.Namespace).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up volume group release: %w", err)
	}
	if err := claimevents.Setup(mgr, claimevents.Options{Namespace: o.Namespace}); err != nil {
		return fmt.Errorf("set up claim events controller: %w", err)
	}
	return nil
}

// podMutatorVolumeIndex is the manager cache's index of LogicalVolumes by status.volumeID that the
// pod webhook may use: the CSI controller service's, when it runs in this process; "" otherwise.
func podMutatorVolumeIndex(o Options) string {
	if o.CSISocket == "" {
		return ""
	}
	return csicontroller.IndexVolumeID
}
