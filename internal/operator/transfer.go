package operator

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"

	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
	"github.com/lvm-operator/lvm-operator/internal/controller/transfersigner"
	"github.com/lvm-operator/lvm-operator/internal/controller/transfertoken"
)

// The transfer signer (internal/controller/transfersigner) approves and signs the node agents'
// CertificateSigningRequests of signer topolvm.io/transfer, and only those (the approve and sign
// verbs name that signer); it keeps the transfer authority in the Secret lvms-transfer-authority and
// applies its public half to the ConfigMap lvms-transfer-trust, both in the operator namespace. Its
// RBAC markers are here, as the operator's role is generated from this package (make manifests).
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/approval;certificatesigningrequests/status,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=topolvm.io/transfer,verbs=approve;sign
// +kubebuilder:rbac:groups="",namespace=lvms-system,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=lvms-system,resources=secrets,resourceNames=lvms-transfer-authority,verbs=get
// +kubebuilder:rbac:groups="",namespace=lvms-system,resources=configmaps,resourceNames=lvms-transfer-trust,verbs=get;list;watch;create;patch

// setupTransfer adds the transfer signer and the publisher of the transfer trust, which run on the
// leader (the authority Secret is read, or made, at once), and the issuer of transfer tokens
// (internal/controller/transfertoken).
func setupTransfer(ctx context.Context, mgr ctrl.Manager, o Options) error {
	authority, err := transfersigner.Setup(ctx, mgr, transfersigner.Options{
		Namespace:          o.Namespace,
		NodeServiceAccount: lvmcluster.NodeServiceAccountName,
		FieldOwner:         lvmcluster.FieldOwner,
	})
	if err != nil {
		return fmt.Errorf("set up the transfer signer: %w", err)
	}
	tokens, err := transfertoken.New(transfertoken.Options{
		Client: mgr.GetClient(), Pods: mgr.GetAPIReader(), Reader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("lvms-operator"), Key: authority.TokenKey(), Namespace: o.Namespace,
		AgentLabels: map[string]string{"app.kubernetes.io/name": lvmcluster.NodeDaemonSetName},
		Port:        lvmcluster.TransferPort,
	})
	if err != nil {
		return err
	}
	if err := tokens.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the transfer token issuer: %w", err)
	}
	return nil
}

// crossNodePolicy is the CSI controller's Options.CrossNode: restores and clones may move between nodes
// when the flag says so, or an LVMCluster of the operator's namespace (read from the cache) that is not
// being deleted has spec.transfer.crossNode Enabled.
func crossNodePolicy(flag bool, r client.Reader, namespace string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		if flag {
			return true, nil
		}
		var list lvmv1alpha1.LVMClusterList
		if err := r.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return false, fmt.Errorf("list LVMClusters: %w", err)
		}
		for i := range list.Items {
			if c := &list.Items[i]; c.DeletionTimestamp.IsZero() && c.CrossNode() {
				return true, nil
			}
		}
		return false, nil
	}
}
