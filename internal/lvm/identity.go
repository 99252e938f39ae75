package lvm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Identity tags name the node and the cluster that made a VG or LV, beside
// the ownership Tag: "lvms.node=<node name>" and "lvms.cluster=<cluster id>"
// (the UID of the cluster's kube-system namespace). A disk shared between
// nodes, or moved from another cluster, then shows whose VG it holds.
const (
	NodeTagPrefix    = "lvms.node="
	ClusterTagPrefix = "lvms.cluster="
)

// Identity is who this client acts for. An empty field is not checked and
// not tagged.
type Identity struct {
	Node    string
	Cluster string
}

// Tags are the identity tags of id.
func (id Identity) Tags() []string {
	var tags []string
	if id.Node != "" {
		tags = append(tags, NodeTagPrefix+id.Node)
	}
	if id.Cluster != "" {
		tags = append(tags, ClusterTagPrefix+id.Cluster)
	}
	return tags
}

// Validate checks that the identity tags are valid lvm2 tags.
func (id Identity) Validate() error {
	for _, t := range id.Tags() {
		if err := ValidTag(t); err != nil {
			return fmt.Errorf("identity: %w", err)
		}
	}
	return nil
}

// Foreign returns why tags say another node or cluster made the object, ""
// when they do not. Tags without identity (a VG made by LVMS, or before
// identity tags existed) are not foreign: the object can be adopted.
func (id Identity) Foreign(tags []string) string {
	var why []string
	for _, f := range []struct{ prefix, ours, what string }{
		{NodeTagPrefix, id.Node, "node"},
		{ClusterTagPrefix, id.Cluster, "cluster"},
	} {
		if f.ours == "" {
			continue
		}
		for _, t := range tags {
			if v, ok := strings.CutPrefix(t, f.prefix); ok && v != f.ours {
				why = append(why, fmt.Sprintf("%s %q (this is %s %q)", f.what, v, f.what, f.ours))
			}
		}
	}
	if len(why) == 0 {
		return ""
	}
	return "it was made by " + strings.Join(why, " and ")
}

// VolumeTags are the tags of a volume LV: the ownership Tag, the identity tags of id, then extra,
// each once. An extra tag lvm2 would refuse is ErrInvalidArgument.
func (id Identity) VolumeTags(extra []string) ([]string, error) {
	tags := append([]string{Tag}, id.Tags()...)
	for _, t := range extra {
		if err := ValidTag(t); err != nil {
			return nil, err
		}
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return tags, nil
}

// with returns tags followed by the identity tags it lacks: what the client tags a VG or LV with.
func (id Identity) with(tags []string) []string { return slices.Concat(tags, id.Missing(tags)) }

// Missing returns the identity tags that tags lacks.
func (id Identity) Missing(tags []string) []string {
	return slices.DeleteFunc(id.Tags(), func(t string) bool { return slices.Contains(tags, t) })
}

// ErrForeign is returned when the VG carries the ownership Tag but its identity tags name
// another node or cluster. It wraps ErrNotOurs.
var ErrForeign = fmt.Errorf("belongs to another node or cluster: %w", ErrNotOurs)

// IsForeign reports whether err is ErrForeign.
func IsForeign(err error) bool { return errors.Is(err, ErrForeign) }

// WithIdentity returns a client that tags the VGs and LVs it creates with
// id and refuses to modify a VG whose identity tags name another node or
// cluster.
func (c *Client) WithIdentity(id Identity) *Client {
	return &Client{exec: c.exec, id: id, config: c.config}
}

// Identity is the identity the client acts for.
func (c *Client) Identity() Identity { return c.id }

// checkOwned refuses a VG without the ownership Tag, or one that another
// node or cluster made.
func (c *Client) checkOwned(vg VG) error {
	if err := checkOwned(vg); err != nil {
		return err
	}
	if why := c.id.Foreign(vg.Tags); why != "" {
		return fmt.Errorf("VG %s: %s: %w", vg.Name, why, ErrForeign)
	}
	return nil
}

// AddVGTags adds tags to an owned VG (`vgchange --addtag`): how a VG made
// without identity tags is adopted.
func (c *Client) AddVGTags(ctx context.Context, vg VG, tags ...string) error {
	if err := c.checkOwned(vg); err != nil {
		return fmt.Errorf("tag VG: %w", err)
	}
	ta, err := tagArgs(tags)
	if err != nil || len(ta) == 0 {
		return fmt.Errorf("tag VG %s: %w", vg.Name, errors.Join(ErrInvalidArgument, err))
	}
	if err := c.run(ctx, append(append([]string{"vgchange"}, ta...), vg.Name)...); err != nil {
		return fmt.Errorf("tag VG %s: %w", vg.Name, err)
	}
	return nil
}
