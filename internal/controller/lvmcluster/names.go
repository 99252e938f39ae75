package lvmcluster

import (
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// Names and labels shared by the operands.
const (
	// StorageClassPrefix prefixes the StorageClass and VolumeSnapshotClass of each device class.
	StorageClassPrefix = "lvms-"
	// Finalizer holds an LVMCluster until its operands are torn down.
	Finalizer = "lvmcluster.topolvm.io"
	// FieldOwner is the server-side apply field manager of every operand.
	FieldOwner = "lvms-operator"
	// StampFieldOwner is the field manager of AnnotationOperandUID alone, so that the operand
	// applies of FieldOwner, which do not know the UID beforehand, leave the stamp in place.
	StampFieldOwner = "lvms-operator-stamp"
	// AnnotationOperandUID stamps every operand the operator made with that object's own UID. The
	// operator deletes an operand only when the stamp equals the object's UID: a copy (kubectl get
	// -o yaml, new name, apply) carries our labels and the original's stamp, never its own UID.
	AnnotationOperandUID = "lvm.topolvm.io/operand-uid"
	// NodeDaemonSetName is the name of the node agent DaemonSet.
	NodeDaemonSetName = "lvms-node"
	// NodeServiceAccountName is the service account the node agent runs as.
	NodeServiceAccountName = "lvms-node"
	// NodeTerminationGracePeriodSeconds is how long a stopping node agent may take: one host
	// command's deadline (exec.DefaultTimeout, 5 min) and half a minute to stop the rest.
	NodeTerminationGracePeriodSeconds = 330

	// With --snapshot-metadata (changed block tracking, docs/changed-blocks.md) the operator issues
	// three Secrets from CAs of its own: SnapshotMetadataNodeCert, the node agents' serving
	// certificate; SnapshotMetadataClientCert, the client certificate `lvms snapshot-metadata`
	// calls them with; SnapshotMetadataServerCert, the serving certificate of the
	// external-snapshot-metadata sidecar. Node agents serve on SnapshotMetadataNodePort.
	SnapshotMetadataNodeCert   = "lvms-snapshot-metadata-node-cert"
	SnapshotMetadataClientCert = "lvms-snapshot-metadata-client-cert"
	SnapshotMetadataServerCert = "lvms-snapshot-metadata-server-cert"
	SnapshotMetadataNodePort   = 9820
	// TransferPort is where each node agent serves its node's volumes to the other agents (copies
	// between nodes; mutual TLS).
	TransferPort = 9830

	// LabelOwnerName and LabelOwnerNamespace mark cluster-scoped operands (which cannot carry an
	// owner reference to a namespaced LVMCluster) with their LVMCluster.
	LabelOwnerName      = "lvm.topolvm.io/owned-by-name"
	LabelOwnerNamespace = "lvm.topolvm.io/owned-by-namespace"
	// LabelDeviceClass names the device class of a StorageClass or VolumeSnapshotClass.
	LabelDeviceClass = "lvm.topolvm.io/device-class"
	// LabelManagedBy is the standard managed-by label.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	managedByValue = "lvms-operator"

	// AnnotationDefaultStorageClass marks the cluster's default StorageClass.
	AnnotationDefaultStorageClass = "storageclass.kubernetes.io/is-default-class"
	// AnnotationDefaultSnapshotClass marks the default VolumeSnapshotClass.
	AnnotationDefaultSnapshotClass = "snapshot.storage.kubernetes.io/is-default-class"
)

// StorageClassName is the name of the StorageClass (and VolumeSnapshotClass) of a device class.
func StorageClassName(deviceClass string) string { return StorageClassPrefix + deviceClass }

// ownerLabels are the labels every operand carries.
func ownerLabels(c *lvmv1alpha1.LVMCluster) map[string]string {
	return map[string]string{
		LabelOwnerName:      c.Name,
		LabelOwnerNamespace: c.Namespace,
		LabelManagedBy:      managedByValue,
	}
}

func withLabels(base map[string]string, extra ...map[string]string) map[string]string {
	out := make(map[string]string, len(base))
	for _, m := range append([]map[string]string{base}, extra...) {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
