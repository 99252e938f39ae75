package nodeagent

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
)

// NodeNameField is the LogicalVolume field the API server selects by: the CRD lists
// .spec.nodeName in its selectableFields.
const NodeNameField = "spec.nodeName"

// LogicalVolumesOfNode returns the cache configuration that holds only node's LogicalVolumes, the
// only ones the node agent reads; without it every agent held every LogicalVolume of the cluster.
// The API server selects custom resources by a field of theirs since Kubernetes 1.31 (CRD
// selectable fields, on by default); on one that cannot, the probe list is refused as a bad request,
// ok is false and the caller keeps the cluster-wide cache. Any other error of the probe is returned.
func LogicalVolumesOfNode(ctx context.Context, r client.Reader, node string) (by cache.ByObject, ok bool, err error) {
	sel := fields.OneTermEqualSelector(NodeNameField, node)
	err = r.List(ctx, &topolvmv1.LogicalVolumeList{}, client.MatchingFieldsSelector{Selector: sel}, client.Limit(1))
	switch {
	case err == nil:
		return cache.ByObject{Field: sel}, true, nil
	case apierrors.IsBadRequest(err):
		return cache.ByObject{}, false, nil
	}
	return cache.ByObject{}, false, fmt.Errorf("list the LogicalVolumes of node %s by %s: %w", node, NodeNameField, err)
}
