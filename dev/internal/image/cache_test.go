package image

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cacheSpec is a one-layer image holding file with data.
func cacheSpec(data string) Spec {
	t := NewTree()
	baseFiles(t)
	t.AddFile("hello", 0o755, []byte(data))
	return Spec{
		Ref:        "lvms.local/cache-test:dev",
		Layers:     []Layer{{Tree: t, CreatedBy: "test"}},
		Entrypoint: []string{"/hello"},
		Created:    time.Unix(1700000000, 0).UTC(),
	}
}

// TestWriteKeepsAnArchiveOfTheSameInputs: a second build of the same inputs keeps the archive (and
// says so); changed content, a changed config or a digest file that no longer matches rebuild it,
// and the rebuilt archive of the original inputs has the original digest.
func TestWriteKeepsAnArchiveOfTheSameInputs(t *testing.T) {
	var progress bytes.Buffer
	out := t.TempDir()
	b := &Builder{opts: Options{RepoDir: filepath.Join("..", "..", ".."), OutDir: out, Progress: &progress}}
	sbom := []byte(`{"spdx":"test"}`)

	first, err := b.write(cacheSpec("v1"), "hello", sbom)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(progress.String(), "unchanged inputs") {
		t.Fatalf("the first build reused an archive: %s", progress.String())
	}
	stat := func() time.Time {
		fi, err := os.Stat(first.Archive)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	before := stat()

	again, err := b.write(cacheSpec("v1"), "hello", sbom)
	if err != nil {
		t.Fatal(err)
	}
	if again != first || !stat().Equal(before) || !strings.Contains(progress.String(), "unchanged inputs") {
		t.Fatalf("same inputs: got %+v, want the kept archive %+v (progress %q)", again, first, progress.String())
	}

	changed := cacheSpec("v1")
	changed.Entrypoint = []string{"/hello", "--flag"}
	for _, tc := range []struct {
		name      string
		spec      Spec
		sbom      []byte
		newDigest bool // the SBOM is a file beside the archive here, not in the image
	}{
		{"file content", cacheSpec("v2"), sbom, true},
		{"config", changed, sbom, true},
		{"sbom", cacheSpec("v1"), []byte(`{"spdx":"other"}`), false},
	} {
		progress.Reset()
		res, err := b.write(tc.spec, "hello", tc.sbom)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(progress.String(), "unchanged inputs") {
			t.Errorf("%s changed: the archive was kept", tc.name)
		}
		if tc.newDigest && res.Digest == first.Digest {
			t.Errorf("%s changed: digest %s is the first build's", tc.name, res.Digest)
		}
		if got, err := os.ReadFile(filepath.Join(out, "hello.spdx.json")); err != nil || !bytes.Equal(got, tc.sbom) {
			t.Errorf("%s changed: SBOM file %q (%v), want %q", tc.name, got, err, tc.sbom)
		}
	}

	// Back to the first inputs, but the digest file no longer matches the record: rebuilt.
	if _, err := b.write(cacheSpec("v1"), "hello", sbom); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first.DigestFile, []byte("sha256:0000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	progress.Reset()
	res, err := b.write(cacheSpec("v1"), "hello", sbom)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(progress.String(), "unchanged inputs") {
		t.Errorf("a digest file that does not match the record kept the archive")
	}
	if res.Digest != first.Digest {
		t.Errorf("rebuilt from the first inputs: digest %s, want %s", res.Digest, first.Digest)
	}
}
