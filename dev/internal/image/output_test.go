package image

import (
	"archive/tar"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func testSpec() Spec {
	tree := NewTree()
	baseFiles(tree)
	tree.AddFile("pause", 0o755, []byte("not really a program"))
	return Spec{
		Ref: "lvms.local/pause:dev", Created: epoch, Entrypoint: []string{"/pause"}, User: "65532:65532",
		Env: []string{DefaultPath}, Labels: map[string]string{LabelTitle: "pause"},
		Layers: []Layer{{Tree: tree, CreatedBy: "test"}},
	}
}

func TestWriteArchive(t *testing.T) {
	img, err := testSpec().Image()
	if err != nil {
		t.Fatal(err)
	}
	dirA, dirB := t.TempDir(), t.TempDir()
	res, err := WriteArchive(img, "lvms.local/pause:dev", dirA, "pause", epoch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteArchive(img, "lvms.local/pause:dev", dirB, "pause", epoch); err != nil {
		t.Fatal(err)
	}
	a, _ := fileSHA256(res.Archive)
	b, _ := fileSHA256(filepath.Join(dirB, "pause.tar"))
	if a != b {
		t.Fatal("the same image written twice gives different archives")
	}
	digest, err := os.ReadFile(res.DigestFile)
	if err != nil || string(digest) != res.Digest.String()+"\n" {
		t.Fatalf("digest file %q (%v), want %s", digest, err, res.Digest)
	}

	idx := readIndex(t, res.Archive)
	if len(idx.Manifests) != 1 {
		t.Fatalf("index.json: %+v", idx)
	}
	m := idx.Manifests[0]
	if m.Digest != res.Digest || m.MediaType != types.OCIManifestSchema1 ||
		m.Annotations["io.containerd.image.name"] != "lvms.local/pause:dev" ||
		m.Annotations["org.opencontainers.image.ref.name"] != "lvms.local/pause:dev" ||
		m.Platform == nil || m.Platform.Architecture != "amd64" {
		t.Fatalf("index.json manifest entry: %+v", m)
	}

	back, err := ReadArchive(res.Archive, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Created.Equal(epoch) || cfg.Config.User != "65532:65532" || len(cfg.History) != 1 ||
		!cfg.History[0].Created.Equal(epoch) || cfg.OS != "linux" {
		t.Fatalf("config: %+v", cfg)
	}
}

// readIndex returns index.json of an OCI archive and checks the oci-layout file is there.
func readIndex(t *testing.T, archive string) v1.IndexManifest {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var idx v1.IndexManifest
	found := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		found[hdr.Name] = true
		if hdr.Name == "index.json" {
			if err := json.NewDecoder(tr).Decode(&idx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !found["oci-layout"] || !found["index.json"] {
		t.Fatalf("archive entries %v: want oci-layout and index.json", found)
	}
	return idx
}

func TestImageDigestStable(t *testing.T) {
	digest := func(s Spec) v1.Hash {
		img, err := s.Image()
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if a, b := digest(testSpec()), digest(testSpec()); a != b {
		t.Fatalf("same spec, digests %s and %s", a, b)
	}
	changed := testSpec()
	changed.User = "0:0"
	if digest(changed) == digest(testSpec()) {
		t.Fatal("a different config gave the same digest")
	}
}
