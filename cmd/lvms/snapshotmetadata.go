package main

import (
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/csi/identity"
	"github.com/lvm-operator/lvm-operator/internal/snapmeta"
)

type snapshotMetadataFlags struct {
	csiAddress string
	certDir    string
	namespace  string
	nodePort   int
	probeAddr  string
}

// The proxy reads LogicalVolumes cluster-wide and the node agent Pods of its namespace: its own
// ServiceAccount's roles are in config/components/snapshot-metadata.

func newSnapshotMetadataCommand() *cobra.Command {
	var f snapshotMetadataFlags
	cmd := &cobra.Command{
		Use:   "snapshot-metadata",
		Short: "Serve the CSI SnapshotMetadata service to the external-snapshot-metadata sidecar",
		Long: "Changed block tracking of thin device classes: the sidecar calls this on a unix socket, and each\n" +
			"call is forwarded over mutual TLS to the node agent of the node that holds the snapshots, whose\n" +
			"thin pool metadata answers it (node agents run with --snapshot-metadata-address).\n" +
			"See docs/changed-blocks.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSnapshotMetadata(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.csiAddress, "csi-address", "/csi/csi.sock", "unix socket the sidecar calls (its --csi-address)")
	fl.StringVar(&f.certDir, "cert-dir", "",
		"directory with the client key pair (tls.crt, tls.key) and the CA of the node agents' serving certificates "+
			"(ca.crt); read at every call (required)")
	fl.StringVar(&f.namespace, "namespace", envOr("POD_NAMESPACE", "lvms-system"), "namespace of the node agent Pods")
	fl.IntVar(
		&f.nodePort,
		"node-port",
		lvmcluster.SnapshotMetadataNodePort,
		"port of the node agents' snapshot metadata endpoint",
	)
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":9810", "health probe address (/healthz, /readyz)")
	return cmd
}

func runSnapshotMetadata(cmd *cobra.Command, f snapshotMetadataFlags) error {
	if f.certDir == "" {
		return fmt.Errorf("--cert-dir is required")
	}
	ctrl.SetLogger(zap.New())
	scheme, err := operatorScheme()
	if err != nil {
		return err
	}
	agents := map[string]string{"app.kubernetes.io/name": lvmcluster.NodeDaemonSetName}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: f.probeAddr,
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {
				Namespaces: map[string]cache.Config{f.namespace: {}},
				Label:      labels.SelectorFromSet(agents),
			},
		}},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.GetCache().IndexField(cmd.Context(), &topolvmv1.LogicalVolume{}, snapmeta.IndexVolumeID,
		snapmeta.IndexVolumeIDFunc); err != nil {
		return fmt.Errorf("index LogicalVolumes: %w", err)
	}
	locate := &snapmeta.KubeLocator{Client: mgr.GetCache(), Namespace: f.namespace, PodLabels: agents, Port: f.nodePort}
	srv, err := lvmcsi.NewServer(f.csiAddress, ctrl.Log.WithName("csi"))
	if err != nil {
		return fmt.Errorf("CSI server: %w", err)
	}
	csi.RegisterIdentityServer(srv.GRPC, identity.NewSnapshotMetadata())
	csi.RegisterSnapshotMetadataServer(srv.GRPC, snapmeta.NewProxy(locate, f.certDir))
	if err := mgr.Add(srv); err != nil {
		return fmt.Errorf("add CSI server: %w", err)
	}
	for name, check := range map[string]healthz.Checker{"ping": healthz.Ping} {
		if err := mgr.AddHealthzCheck(name, check); err != nil {
			return fmt.Errorf("add health check: %w", err)
		}
		if err := mgr.AddReadyzCheck(name, check); err != nil {
			return fmt.Errorf("add ready check: %w", err)
		}
	}
	return mgr.Start(cmd.Context())
}
