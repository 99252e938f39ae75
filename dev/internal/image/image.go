package image

import (
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Label keys of the OCI image spec's pre-defined annotations, used as config labels.
const (
	LabelSource      = "org.opencontainers.image.source"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelVersion     = "org.opencontainers.image.version"
	LabelCreated     = "org.opencontainers.image.created"
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelLicenses    = "org.opencontainers.image.licenses"
)

// DefaultPath is the PATH of every image.
const DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Layer is one layer of a Spec and the history line describing it.
type Layer struct {
	Tree      *Tree
	CreatedBy string
}

// Spec is everything an image is made of. The same Spec gives the same image digest.
type Spec struct {
	// Ref is the full reference the image is known by ("ghcr.io/lvm-operator/lvms:v0.1.0").
	Ref        string
	Layers     []Layer
	Entrypoint []string
	Cmd        []string
	User       string
	Env        []string
	WorkingDir string
	Labels     map[string]string
	// Created is the image's creation time, the time of every file in it and of its history.
	Created time.Time
}

// Image assembles the OCI image: an OCI manifest and config for linux/amd64 with one history
// entry per layer, all dated Created.
func (s Spec) Image() (v1.Image, error) {
	created := v1.Time{Time: s.Created.UTC().Truncate(time.Second)}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		Created:      created,
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint: s.Entrypoint,
			Cmd:        s.Cmd,
			User:       s.User,
			Env:        s.Env,
			WorkingDir: s.WorkingDir,
			Labels:     s.Labels,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("image config of %s: %w", s.Ref, err)
	}
	adds := make([]mutate.Addendum, 0, len(s.Layers))
	for _, l := range s.Layers {
		layer, err := l.Tree.Layer(created.Time)
		if err != nil {
			return nil, fmt.Errorf("layer %q of %s: %w", l.CreatedBy, s.Ref, err)
		}
		adds = append(adds, mutate.Addendum{
			Layer:     layer,
			MediaType: types.OCILayer,
			History:   v1.History{Created: created, CreatedBy: l.CreatedBy, Comment: "lvms-dev image build"},
		})
	}
	img, err = mutate.Append(img, adds...)
	if err != nil {
		return nil, fmt.Errorf("append layers of %s: %w", s.Ref, err)
	}
	return img, nil
}
