package vgmanager_test

import (
	"slices"
	"strings"
	"testing"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

var nodeA = lvm.Identity{Node: "node-a", Cluster: "c1"}

// A new VG carries the node's identity; an existing one is adopted only when no identity tag says
// it is another node's or cluster's, and adopting it adds the missing tags.
func TestNodeIdentity(t *testing.T) {
	tests := []struct {
		name        string
		existing    []string // tags of an existing vg1 on /dev/sdb; nil: no VG
		wantStatus  lvmv1alpha1.VGStatusType
		wantReason  string
		wantChanges []string
	}{
		{name: "new VG is tagged", wantStatus: lvmv1alpha1.VGStatusReady,
			wantChanges: []string{
				"lvm vgcreate --addtag lvms --addtag lvms.node=node-a --addtag lvms.cluster=c1 vg1 /dev/sdb"}},
		{name: "VG of this node", existing: []string{lvm.Tag, "lvms.node=node-a", "lvms.cluster=c1"},
			wantStatus: lvmv1alpha1.VGStatusReady},
		{name: "VG made by LVMS is adopted", existing: []string{lvm.Tag}, wantStatus: lvmv1alpha1.VGStatusReady,
			wantChanges: []string{"lvm vgchange --addtag lvms.node=node-a --addtag lvms.cluster=c1 vg1"}},
		{name: "VG of another node", existing: []string{lvm.Tag, "lvms.node=node-b", "lvms.cluster=c1"},
			wantStatus: lvmv1alpha1.VGStatusFailed,
			wantReason: `the volume group vg1 seen on node node-a is not this node's: it was made by node "node-b"`},
		{name: "VG of another cluster", existing: []string{lvm.Tag, "lvms.node=node-a", "lvms.cluster=c0"},
			wantStatus: lvmv1alpha1.VGStatusFailed, wantReason: `cluster "c0" (this is cluster "c1")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode([]string{"/dev/sdb"}, nil)
			if tt.existing != nil {
				n.addVG("vg1", []string{"/dev/sdb"}, tt.existing...)
			}
			spec := lvmv1alpha1.LVMVolumeGroupSpec{DeviceDiscoveryPolicy: lvmv1alpha1.DeviceDiscoveryPolicyDynamic}
			out := n.reconcile(t, vgmanager.Input{Name: "vg1", Spec: spec, Identity: nodeA})
			if got := n.modifications(); !slices.Equal(got, tt.wantChanges) {
				t.Errorf("changes %q, want %q", got, tt.wantChanges)
			}
			if out.Status.Status != tt.wantStatus || !strings.Contains(out.Status.Reason, tt.wantReason) {
				t.Errorf("status %s %q, want %s %q", out.Status.Status, out.Status.Reason, tt.wantStatus, tt.wantReason)
			}
		})
	}
}
