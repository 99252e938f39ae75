package dist

import (
	"fmt"

	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
	"github.com/lvm-operator/lvm-operator/internal/operator"
)

// snapshotMetadataComponent is the snapshot metadata service (config/components/snapshot-metadata
// at dir) in the chart: the value snapshotMetadata.enabled. The component adds the ServiceAccount
// lvms-snapshot-metadata, the Service lvms-snapshot-metadata and their RBAC (and the operator's
// rule on SnapshotMetadataServices), and changes the operator's Deployment (--snapshot-metadata).
// The Deployment lvms-snapshot-metadata and its certificates are the operator's own (with
// --snapshot-metadata it creates them), so the chart has no image value for its sidecar.
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

// The operator's switches of the snapshot metadata service (internal/operator): the flag the
// component adds, and the variable that overrides its sidecar's image (RELATED_IMAGE_ marks, by
// OLM's convention, a variable that names an image the operator runs).
const (
	snapshotMetadataFlag     = "--" + operator.SnapshotMetadataFlag
	relatedImagePrefix       = "RELATED_IMAGE_"
	snapshotMetadataImageEnv = operator.SnapshotMetadataSidecarImageEnv
)

// snapshotMetadataSidecarImage is the external-snapshot-metadata sidecar the operator runs in the
// Deployment lvms-snapshot-metadata.
const snapshotMetadataSidecarImage = lvmcluster.DefaultSnapshotMetadataSidecarImage

// bundleInstall is what the OLM bundle carries: the install with the snapshot metadata component,
// when o names it, so that its ServiceAccount, RBAC and Service come with every OLM install; the
// service itself stays off until the Subscription turns it on (operatorUnderOLM). Without the
// component, the install as it is.
func bundleInstall(inst *Install, o Options) (*Install, error) {
	if o.SnapshotMetadataComponent == "" {
		return inst, nil
	}
	b, err := renderWithComponents(o.ConfigDir, []string{o.SnapshotMetadataComponent})
	if err != nil {
		return nil, fmt.Errorf("install with the snapshot metadata service: %w", err)
	}
	return b, nil
}
