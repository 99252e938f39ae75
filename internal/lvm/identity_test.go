package lvm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

var nodeA = Identity{Node: "node-a", Cluster: "c1"}

func TestIdentityForeign(t *testing.T) {
	tests := []struct {
		name string
		id   Identity
		tags []string
		want string // substring of the reason, "" for not foreign
	}{
		{"same node and cluster", nodeA, []string{"lvms", "lvms.node=node-a", "lvms.cluster=c1"}, ""},
		{"no identity tags (LVMS-made VG)", nodeA, []string{"lvms"}, ""},
		{"other node", nodeA, []string{"lvms", "lvms.node=node-b", "lvms.cluster=c1"}, `node "node-b"`},
		{"other cluster", nodeA, []string{"lvms", "lvms.node=node-a", "lvms.cluster=c2"}, `cluster "c2"`},
		{"both", nodeA, []string{"lvms.node=x", "lvms.cluster=y"}, `node "x" (this is node "node-a") and cluster "y"`},
		{"cluster unknown here", Identity{Node: "node-a"}, []string{"lvms.node=node-a", "lvms.cluster=c2"}, ""},
		{"no identity here", Identity{}, []string{"lvms.node=node-b"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.id.Foreign(tt.tags)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("Foreign(%v) = %q, want %q", tt.tags, got, tt.want)
			}
		})
	}
	if m := nodeA.Missing([]string{"lvms", "lvms.node=node-a"}); len(m) != 1 || m[0] != "lvms.cluster=c1" {
		t.Errorf("Missing = %v", m)
	}
	if err := (Identity{Node: "bad node"}).Validate(); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Validate(space) = %v", err)
	}
}

func TestIdentityTagsEveryCreate(t *testing.T) {
	tests := []struct {
		name string
		op   func(ctx context.Context, c *Client) error
		want string
	}{
		{"vgcreate", func(ctx context.Context, c *Client) error {
			return c.CreateVG(ctx, "vg1", []string{"/dev/sdb"}, "lvms.node=node-a")
		}, "lvm vgcreate --addtag lvms --addtag lvms.node=node-a --addtag lvms.cluster=c1 vg1 /dev/sdb"},
		{"linear", func(ctx context.Context, c *Client) error {
			return c.CreateLV(ctx, ours, LVOptions{Name: "lv", Size: 1024, Tags: []string{"lvms"}})
		}, "lvm lvcreate -y --wipesignatures y -n lv -L 1024b --addtag lvms " +
			"--addtag lvms.node=node-a --addtag lvms.cluster=c1 vg1"},
		{"thin", func(ctx context.Context, c *Client) error {
			return c.CreateThinLV(ctx, ours, ThinLVOptions{Name: "t", Pool: "pool", VirtualSize: 1024})
		}, "lvm lvcreate -y --wipesignatures y -n t --type thin -V 1024b --thinpool pool " +
			"--addtag lvms.node=node-a --addtag lvms.cluster=c1 vg1"},
		{"snapshot", func(ctx context.Context, c *Client) error {
			return c.CreateSnapshot(ctx, ours, SnapshotOptions{Name: "s", Origin: "t"})
		}, "lvm lvcreate -y -s -n s --addtag lvms.node=node-a --addtag lvms.cluster=c1 vg1/t"},
		{"adopt", func(ctx context.Context, c *Client) error {
			return c.AddVGTags(ctx, ours, nodeA.Tags()...)
		}, "lvm vgchange --addtag lvms.node=node-a --addtag lvms.cluster=c1 vg1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := exectest.New()
			f.Handler = func(exectest.Call) exectest.Response { return exectest.OK("") }
			if err := tt.op(t.Context(), New(f).WithIdentity(nodeA)); err != nil {
				t.Fatal(err)
			}
			if d := exectest.Diff(f, bounded(tt.want)); d != "" {
				t.Error(d)
			}
		})
	}
}

// A volume LV's tags: the ownership tag, the identity's, then the request's, each once; a tag lvm2
// would refuse is ErrInvalidArgument.
func TestVolumeTags(t *testing.T) {
	got, err := nodeA.VolumeTags([]string{"pvc=x", Tag, "lvms.node=node-a", "pvc=x"})
	want := []string{Tag, "lvms.node=node-a", "lvms.cluster=c1", "pvc=x"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("VolumeTags = %q, %v; want %q", got, err, want)
	}
	if _, err := nodeA.VolumeTags([]string{"a b"}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("VolumeTags with a space: %v, want ErrInvalidArgument", err)
	}
}

// Every modifying call refuses a VG another node or cluster made, before it runs anything.
func TestForeignVGIsRefused(t *testing.T) {
	foreign := VG{Name: "vg1", Tags: []string{"lvms", "lvms.node=node-b"}}
	c := New(exectest.New()).WithIdentity(nodeA) // no responses: any execution fails
	ctx := t.Context()
	for name, err := range map[string]error{
		"create":   c.CreateLV(ctx, foreign, LVOptions{Name: "lv", Size: 1024}),
		"thin":     c.CreateThinPool(ctx, foreign, ThinPoolOptions{Name: "p", Size: 1 << 30}),
		"extend":   c.ExtendVG(ctx, foreign, "/dev/sdc"),
		"reduce":   c.ReduceVG(ctx, foreign, "/dev/sdc"),
		"remove":   c.RemoveVG(ctx, foreign),
		"lvremove": c.RemoveLV(ctx, foreign, "lv"),
		"tag":      c.AddVGTags(ctx, foreign, "x"),
		"activate": c.ActivateVG(ctx, foreign, true),
	} {
		if !IsForeign(err) || !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), `node "node-b"`) {
			t.Errorf("%s on a foreign VG: %v, want ErrForeign naming node-b", name, err)
		}
	}
}
