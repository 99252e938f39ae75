package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Annotations of the index.json entry: the OCI tag annotation and the one containerd's
// `ctr images import` reads the image name from.
const (
	annotationRefName        = "org.opencontainers.image.ref.name"
	annotationContainerdName = "io.containerd.image.name"
)

// Result describes an image written by WriteArchive.
type Result struct {
	Ref    string
	Digest v1.Hash
	// Size is the compressed size: manifest, config and layers.
	Size int64
	// Archive is the OCI image layout tarball, DigestFile holds Digest.
	Archive    string
	DigestFile string
}

// WriteArchive writes img as an OCI image layout tarball <dir>/<name>.tar (oci-layout,
// index.json naming the image ref, blobs/sha256/...) that `ctr -n k8s.io images import`
// accepts, and its manifest digest to <dir>/<name>.digest. The tarball's entries are sorted and
// dated mtime, so it is as reproducible as the image.
func WriteArchive(img v1.Image, ref, dir, name string, mtime time.Time) (Result, error) {
	res := Result{Ref: ref, Archive: filepath.Join(dir, name+".tar"), DigestFile: filepath.Join(dir, name+".digest")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(dir, "."+name+"-layout-")
	if err != nil {
		return res, fmt.Errorf("create layout directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	lp, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return res, fmt.Errorf("create OCI layout: %w", err)
	}
	err = lp.AppendImage(img,
		layout.WithAnnotations(map[string]string{annotationRefName: ref, annotationContainerdName: ref}),
		layout.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}))
	if err != nil {
		return res, fmt.Errorf("write %s to the OCI layout: %w", ref, err)
	}
	if res.Digest, err = img.Digest(); err != nil {
		return res, fmt.Errorf("digest of %s: %w", ref, err)
	}
	if res.Size, err = compressedSize(img); err != nil {
		return res, err
	}
	if err := tarDir(tmp, res.Archive, mtime); err != nil {
		return res, err
	}
	if err := os.WriteFile(res.DigestFile, []byte(res.Digest.String()+"\n"), 0o644); err != nil {
		return res, fmt.Errorf("write digest file: %w", err)
	}
	return res, nil
}

func compressedSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, fmt.Errorf("read manifest: %w", err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, fmt.Errorf("read manifest: %w", err)
	}
	n := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		n += l.Size
	}
	return n, nil
}

// tarDir writes the files below dir into the tar file out (via a temporary file and a rename),
// sorted, dated mtime, owned by 0:0.
func tarDir(dir, out string, mtime time.Time) error {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	slices.Sort(files)
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+"-")
	if err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o644); err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", out, err), f.Close())
	}
	tw := tar.NewWriter(f)
	for _, p := range files {
		if err := addFileToTar(tw, dir, p, mtime); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	if err := errors.Join(tw.Close(), f.Close()); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}

func addFileToTar(tw *tar.Writer, dir, p string, mtime time.Time) error {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return fmt.Errorf("archive %s: %w", p, err)
	}
	src, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("archive %s: %w", p, err)
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return fmt.Errorf("archive %s: %w", p, err)
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg, Name: filepath.ToSlash(rel), Mode: 0o644, Size: st.Size(),
		ModTime: mtime.UTC().Truncate(time.Second), Format: tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("archive %s: %w", rel, err)
	}
	if _, err := io.Copy(tw, src); err != nil {
		return fmt.Errorf("archive %s: %w", rel, err)
	}
	return nil
}

// ReadArchive returns the single image of an OCI layout tarball written by WriteArchive.
// The tarball is unpacked into tmpDir, which the caller removes.
func ReadArchive(archive, tmpDir string) (v1.Image, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", archive, err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", archive, err)
		}
		if err := extractFile(tr, hdr, tmpDir); err != nil {
			return nil, fmt.Errorf("read %s: %w", archive, err)
		}
	}
	idx, err := layout.ImageIndexFromPath(tmpDir)
	if err != nil {
		return nil, fmt.Errorf("%s is not an OCI layout: %w", archive, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("read index of %s: %w", archive, err)
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("%s holds %d images, want 1", archive, len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return nil, fmt.Errorf("read image of %s: %w", archive, err)
	}
	return img, nil
}

func extractFile(tr *tar.Reader, hdr *tar.Header, dir string) error {
	if hdr.Typeflag != tar.TypeReg || !filepath.IsLocal(hdr.Name) {
		return fmt.Errorf("unexpected entry %q in an OCI layout tarball", hdr.Name)
	}
	p := filepath.Join(dir, filepath.FromSlash(hdr.Name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("extract %s: %w", hdr.Name, err)
	}
	out, err := os.Create(p)
	if err != nil {
		return fmt.Errorf("extract %s: %w", hdr.Name, err)
	}
	_, err = io.Copy(out, tr)
	if err := errors.Join(err, out.Close()); err != nil {
		return fmt.Errorf("extract %s: %w", hdr.Name, err)
	}
	return nil
}

// Push uploads the image of an OCI layout tarball to ref with the credentials of the Docker
// config (~/.docker/config.json, as `docker login` or `crane auth login` write it).
func Push(ctx context.Context, archive, ref string) (v1.Hash, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("parse %q: %w", ref, err)
	}
	tmp, err := os.MkdirTemp("", "lvms-push-")
	if err != nil {
		return v1.Hash{}, fmt.Errorf("create temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	img, err := ReadArchive(archive, tmp)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.Write(
		r,
		img,
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
	); err != nil {
		return v1.Hash{}, fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("digest of %s: %w", archive, err)
	}
	return d, nil
}

// MiB formats a byte count in MiB with one decimal.
func MiB(n int64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<20)), ".0")
}
