package controller

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// claimSelecting creates a claim whose first consumer the scheduler placed on node (none for ""),
// and names it in the request as --extra-create-metadata does.
func claimSelecting(t *testing.T, node string) reqOpt {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("claim"), Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
	}
	if node != "" {
		pvc.Annotations = map[string]string{annotationSelectedAt: node}
	}
	if err := k8s.Create(t.Context(), pvc); err != nil {
		t.Fatal(err)
	}
	return func(r *csi.CreateVolumeRequest) {
		r.Parameters[paramPVCName], r.Parameters[paramPVCNamespace] = pvc.Name, pvc.Namespace
	}
}

// TestCrossNodeRestorePlacement: with copies between nodes enabled a restore goes where the scheduler
// selected its claim's consumer, or where the requisite topology allows, and names the snapshot's node
// as its source node; so does a clone, which copies through an image of its source.
func TestCrossNodeRestorePlacement(t *testing.T) {
	off := srv.crossNode
	srv.crossNode = func(context.Context) (bool, error) { return true, nil }
	t.Cleanup(func() { srv.crossNode = off })
	src := mustCreate(t, createReq(uniqueName("src"), withParam(driver.ParamDeviceClass, "ssd")))
	snap, err := srv.CreateSnapshot(testCtx(t), &csi.CreateSnapshotRequest{Name: uniqueName("snap"),
		SourceVolumeId: src.GetVolumeId()})
	if err != nil {
		t.Fatal(err)
	}
	restore := fromSnapshot(snap.GetSnapshot().GetSnapshotId())
	tests := []struct {
		name       string
		opts       []reqOpt
		want       codes.Code
		node, from string
		image      bool
	}{
		{"the scheduler selected another node", []reqOpt{restore, preferring(nodeB, nodeA),
			claimSelecting(t, nodeB)}, codes.OK, nodeB, nodeA, false},
		{"the scheduler selected the snapshot's node", []reqOpt{restore, preferring(nodeA, nodeB),
			claimSelecting(t, nodeA)}, codes.OK, nodeA, "", false},
		{"no selection: the snapshot's node", []reqOpt{restore, preferring(nodeB, nodeA)}, codes.OK, nodeA, "", false},
		{"a claim not selected yet: the snapshot's node", []reqOpt{restore, preferring(nodeB, nodeA),
			claimSelecting(t, "")}, codes.OK, nodeA, "", false},
		{"the requisite excludes the snapshot's node", []reqOpt{restore, onNode(nodeB)}, codes.OK, nodeB, nodeA, false},
		{"a selected node the requisite excludes is not taken", []reqOpt{restore, onNode(nodeB),
			claimSelecting(t, nodeFull)}, codes.OK, nodeB, nodeA, false},
		{"a clone goes where the scheduler selected", []reqOpt{fromVolume(src.GetVolumeId()),
			preferring(nodeB, nodeA), claimSelecting(t, nodeB)}, codes.OK, nodeB, nodeA, true},
		{"a clone without a selection stays", []reqOpt{fromVolume(src.GetVolumeId()), preferring(nodeB, nodeA)},
			codes.OK, nodeA, "", false},
		{"a clone the requisite sends elsewhere", []reqOpt{fromVolume(src.GetVolumeId()), onNode(nodeB)},
			codes.OK, nodeB, nodeA, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := uniqueName("restore")
			v, err := srv.CreateVolume(testCtx(t), createReq(name, tt.opts...))
			wantCode(t, err, tt.want)
			if tt.want != codes.OK {
				return
			}
			lv := getLV(t, name)
			if lv.Spec.NodeName != tt.node || lv.Spec.SourceNode != tt.from || lv.Spec.DeviceClass != "ssd" {
				t.Errorf("node %q source node %q class %q, want %q, %q, ssd", lv.Spec.NodeName, lv.Spec.SourceNode,
					lv.Spec.DeviceClass, tt.node, tt.from)
			}
			if image := lv.Annotations[driver.AnnotationCopyImage] == "true"; image != tt.image {
				t.Errorf("annotation %s: %v, want %v", driver.AnnotationCopyImage, image, tt.image)
			}
			if top := v.GetVolume().GetAccessibleTopology(); len(top) != 1 ||
				top[0].GetSegments()[driver.TopologyNodeKey] != tt.node {
				t.Errorf("accessible topology %v, want %s", top, tt.node)
			}
		})
	}
}
