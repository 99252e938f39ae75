package devcluster

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFindImages(t *testing.T) {
	tests := []struct {
		name             string
		archives         []string
		snapshotMetadata bool
		want             []string
		err              string
	}{
		{
			name: "without the snapshot metadata service its images stay on the host",
			archives: []string{
				"lvms.tar",
				"csi-provisioner.tar",
				"snapshot-controller.tar",
				"csi-snapshot-metadata.tar",
				"snapshot-metadata-lister.tar",
			},
			want: []string{"csi-provisioner.tar", "lvms.tar"},
		},
		{
			name: "with it the nodes import them",
			archives: []string{"lvms.tar", "snapshot-controller.tar", "csi-snapshot-metadata.tar",
				"snapshot-metadata-lister.tar"},
			snapshotMetadata: true,
			want:             []string{"csi-snapshot-metadata.tar", "lvms.tar", "snapshot-metadata-lister.tar"},
		},
		{
			name:             "with it a missing image is an error",
			archives:         []string{"lvms.tar", "csi-snapshot-metadata.tar"},
			snapshotMetadata: true,
			err:              "no snapshot-metadata-lister.tar in",
		},
		{
			name:     "no archive at all",
			archives: []string{"snapshot-controller.tar"},
			err:      "no OCI archives",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, a := range tt.archives {
				if err := os.WriteFile(filepath.Join(dir, a), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := findImages(dir, tt.snapshotMetadata)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("findImages: %v, want an error with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, g := range got {
				names = append(names, filepath.Base(g))
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("images %q, want %q", names, tt.want)
			}
		})
	}
}

func TestOverlayAndCRDs(t *testing.T) {
	tests := []struct {
		name       string
		cfg        Config
		components []string
		patched    bool
		crds       []string
	}{
		{name: "default", crds: []string{"/repo/config/crd/bases", "/tools/snapshot-crds"}},
		{
			name: "scheduler extender", cfg: Config{SchedulerExtender: true},
			components: []string{ExtenderComponent}, patched: true,
			crds: []string{"/repo/config/crd/bases", "/tools/snapshot-crds"},
		},
		{
			name: "snapshot metadata", cfg: Config{SnapshotMetadata: true},
			components: []string{SnapshotMetadataComponent},
			crds:       []string{"/repo/config/crd/bases", "/tools/snapshot-crds", "/tools/snapshot-metadata-crds"},
		},
		{
			name: "profiling", cfg: Config{Profiling: true}, components: []string{ProfilingComponent},
			crds: []string{"/repo/config/crd/bases", "/tools/snapshot-crds"},
		},
		{
			name: "evacuator", cfg: Config{Evacuator: true}, components: []string{EvacuatorComponent},
			crds: []string{"/repo/config/crd/bases", "/tools/snapshot-crds"},
		},
		{
			name: "both", cfg: Config{SchedulerExtender: true, SnapshotMetadata: true},
			components: []string{ExtenderComponent, SnapshotMetadataComponent}, patched: true,
			crds: []string{"/repo/config/crd/bases", "/tools/snapshot-crds", "/tools/snapshot-metadata-crds"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.RepoDir, tt.cfg.CSITools = "/repo", "/tools"
			comps, patches, extra := overlayComponents(tt.cfg)
			if !slices.Equal(comps, tt.components) {
				t.Errorf("components %q, want %q", comps, tt.components)
			}
			if got := patches == extenderOverlayPatch; got != tt.patched || !tt.patched && patches != "" {
				t.Errorf("patches %q, want the extender's: %v", patches, tt.patched)
			}
			if _, got := extra["extender-service.yaml"]; got != tt.patched || len(extra) > 1 {
				t.Errorf(
					"extra manifests %v, want the extender's Service: %v",
					slices.Collect(maps.Keys(extra)),
					tt.patched,
				)
			}
			if got := crdDirs(tt.cfg); !slices.Equal(got, tt.crds) {
				t.Errorf("CRD directories %q, want %q", got, tt.crds)
			}
		})
	}
}

// TestComponentsExist: the components the overlay names are in the repository.
func TestComponentsExist(t *testing.T) {
	for _, c := range []string{ExtenderComponent, SnapshotMetadataComponent, EvacuatorComponent, ProfilingComponent} {
		if _, err := os.Stat(filepath.Join("..", "..", "..", c, "kustomization.yaml")); err != nil {
			t.Error(err)
		}
	}
}
