package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Entry is one file, directory or link of a Tree. Ownership, permission bits and link targets are
// all that is kept of a file's metadata; times come from the layer.
type Entry struct {
	// Path is relative to the root, cleaned, without a leading slash ("usr/bin/lvms").
	Path string
	// Type is tar.TypeReg, tar.TypeDir, tar.TypeSymlink or tar.TypeLink.
	Type byte
	// Mode holds the permission bits, including setuid, setgid and sticky.
	Mode int64
	UID  int
	GID  int
	// Data is the content of a regular file.
	Data []byte
	// Link is the target of a symlink, or the Path of the entry a hard link refers to.
	Link string
}

// Tree is an in-memory file system tree that becomes one image layer. The zero value is not
// usable; call NewTree.
type Tree struct {
	entries map[string]*Entry
}

// NewTree returns an empty tree.
func NewTree() *Tree {
	return &Tree{entries: map[string]*Entry{}}
}

// cleanPath turns "/usr/bin/x", "./usr/bin/x" and "usr/bin/x/" into "usr/bin/x"; the root is "".
func cleanPath(p string) string {
	p = path.Clean("/" + p)
	return strings.TrimPrefix(p, "/")
}

// Add inserts e, replacing an entry of the same path, and creates missing parent directories
// (0755, root). A directory added over an existing directory keeps the existing one.
func (t *Tree) Add(e Entry) {
	e.Path = cleanPath(e.Path)
	if e.Path == "" {
		return
	}
	if e.Type == tar.TypeLink {
		e.Link = cleanPath(e.Link)
	}
	t.mkdirAll(path.Dir(e.Path))
	if old, ok := t.entries[e.Path]; ok && old.Type == tar.TypeDir && e.Type == tar.TypeDir {
		return
	}
	t.entries[e.Path] = &e
}

func (t *Tree) mkdirAll(dir string) {
	dir = cleanPath(dir)
	for dir != "" {
		if _, ok := t.entries[dir]; ok {
			return
		}
		t.entries[dir] = &Entry{Path: dir, Type: tar.TypeDir, Mode: 0o755}
		dir = cleanPath(path.Dir(dir))
	}
}

// AddFile adds a regular file owned by root.
func (t *Tree) AddFile(p string, mode int64, data []byte) {
	t.Add(Entry{Path: p, Type: tar.TypeReg, Mode: mode, Data: data})
}

// AddDir adds a directory owned by uid:gid.
func (t *Tree) AddDir(p string, mode int64, uid, gid int) {
	t.Add(Entry{Path: p, Type: tar.TypeDir, Mode: mode, UID: uid, GID: gid})
}

// AddSymlink adds a symbolic link p → target.
func (t *Tree) AddSymlink(p, target string) {
	t.Add(Entry{Path: p, Type: tar.TypeSymlink, Mode: 0o777, Link: target})
}

// AddFromDisk adds the file src as p with the given mode; nothing but its content is taken from
// disk, so the layer does not depend on the file's time, owner or the umask it was written with.
func (t *Tree) AddFromDisk(p, src string, mode int64) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("add %s to the layer: %w", src, err)
	}
	t.AddFile(p, mode, data)
	return nil
}

// Get returns the entry at p, without following symlinks.
func (t *Tree) Get(p string) (*Entry, bool) {
	e, ok := t.entries[cleanPath(p)]
	return e, ok
}

// RemoveAll removes p and everything below it.
func (t *Tree) RemoveAll(p string) {
	p = cleanPath(p)
	for k := range t.entries {
		if k == p || strings.HasPrefix(k, p+"/") {
			delete(t.entries, k)
		}
	}
}

// Entries returns the entries in the order they are written to a layer: sorted by path, hard
// links last so that their targets always come first.
func (t *Tree) Entries() []*Entry {
	out := make([]*Entry, 0, len(t.entries))
	for _, e := range t.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b *Entry) int {
		if la, lb := a.Type == tar.TypeLink, b.Type == tar.TypeLink; la != lb {
			if la {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out
}

// Size is the sum of the sizes of the regular files.
func (t *Tree) Size() int64 {
	var n int64
	for _, e := range t.entries {
		n += int64(len(e.Data))
	}
	return n
}

// WriteTar writes the tree as a tar stream: PAX format, every entry with the time mtime, numeric
// owners only, no access or change times, no extended attributes.
func (t *Tree) WriteTar(w io.Writer, mtime time.Time) error {
	tw := tar.NewWriter(w)
	mtime = mtime.UTC().Truncate(time.Second)
	for _, e := range t.Entries() {
		hdr := &tar.Header{
			Typeflag: e.Type,
			Name:     e.Path,
			Linkname: e.Link,
			Mode:     e.Mode,
			Uid:      e.UID,
			Gid:      e.GID,
			ModTime:  mtime,
			Format:   tar.FormatPAX,
		}
		switch e.Type {
		case tar.TypeDir:
			hdr.Name += "/"
		case tar.TypeReg:
			hdr.Size = int64(len(e.Data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("write tar header of %s: %w", e.Path, err)
		}
		if _, err := tw.Write(e.Data); err != nil {
			return fmt.Errorf("write %s to the tar: %w", e.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("close tar: %w", err)
	}
	return nil
}

// Layer writes the tree as a gzip-compressed OCI layer. The tar is compressed once, in memory;
// Go's gzip writer puts no name or time in its header, so the compressed digest is stable too.
func (t *Tree) Layer(mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("gzip writer: %w", err)
	}
	if err := t.WriteTar(zw, mtime); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress layer: %w", err)
	}
	compressed := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer from tar: %w", err)
	}
	return layer, nil
}
