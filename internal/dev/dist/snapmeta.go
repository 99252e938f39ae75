package dist

// snapshotMetadataProxy runs `lvms snapshot-metadata` from the operator's image.
const snapshotMetadataProxy = "proxy"

// snapshotMetadataComponent is the snapshot metadata service (config/components/snapshot-metadata
// at dir) in the chart: the value snapshotMetadata.enabled. The component adds the
// lvms-snapshot-metadata Deployment (the proxy and the csi-snapshot-metadata sidecar, whose image
// is the value sidecars.snapshotMetadata), its Service and RBAC, and changes the operator's
// Deployment (--snapshot-metadata).
func snapshotMetadataComponent(dir string) Component {
	return Component{
		Dir: dir, Value: "snapshotMetadata", Template: "snapshot-metadata.yaml",
		Doc: []string{
			"The CSI SnapshotMetadata service (changed block tracking of thin device classes) behind the",
			"external-snapshot-metadata sidecar (config/components/snapshot-metadata, docs/changed-blocks.md).",
			"Needs the SnapshotMetadataService CRD (cbt.storage.k8s.io), which the chart does not install.",
		},
	}
}
