package devcluster

// The snapshot metadata service of the dev cluster (`lvms-dev up --snapshot-metadata`): the product
// is installed with the kustomize component config/components/snapshot-metadata (the operator with
// --snapshot-metadata, the lvms-snapshot-metadata Deployment of the proxy and the upstream
// external-snapshot-metadata sidecar), the cluster gets the SnapshotMetadataService CRD, and the
// nodes import the sidecar's image and the image of snapshot-metadata-lister, the upstream example
// client, which runs in a pod because it dials the Service DNS name the SnapshotMetadataService
// advertises. The images are built by `lvms-dev image build --only sidecars` from the binaries of
// hack/csi-tools.sh, and the CRD comes from the same cache.
const (
	// SnapshotMetadataComponent is the kustomize component the product overlay adds.
	SnapshotMetadataComponent = "config/components/snapshot-metadata"
	// ProfilingComponent is the kustomize component that turns on the operator's --profiling
	// (lvms-dev up --profiling).
	ProfilingComponent = "config/components/profiling"
	// snapshotMetadataCRDs is the directory of the SnapshotMetadataService CRD in the CSI tools
	// directory.
	snapshotMetadataCRDs = "snapshot-metadata-crds"
	// snapshotMetadataDeployment is the component's Deployment of the proxy and the sidecar.
	snapshotMetadataDeployment = "lvms-snapshot-metadata"
)

// snapshotMetadataImages are the archives (dev/internal/image.Sidecars) the nodes import only with
// the snapshot metadata service.
var snapshotMetadataImages = []string{"csi-snapshot-metadata.tar", "snapshot-metadata-lister.tar"}
