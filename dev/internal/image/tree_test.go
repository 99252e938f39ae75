package image

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var epoch = time.Unix(1700000000, 0).UTC()

func layerDigest(t *testing.T, tree *Tree, mtime time.Time) string {
	t.Helper()
	l, err := tree.Layer(mtime)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func TestLayerSameInputSameDigest(t *testing.T) {
	build := func(order []string) *Tree {
		tree := NewTree()
		for _, p := range order {
			tree.AddFile(p, 0o644, []byte("content of "+p))
		}
		tree.AddSymlink("bin", "usr/bin")
		return tree
	}
	a := layerDigest(t, build([]string{"usr/bin/a", "etc/b", "usr/lib/c"}), epoch)
	b := layerDigest(t, build([]string{"usr/lib/c", "usr/bin/a", "etc/b"}), epoch)
	if a != b {
		t.Fatalf("insertion order changed the digest: %s vs %s", a, b)
	}
	if c := layerDigest(t, build([]string{"usr/bin/a", "etc/b", "usr/lib/c"}), epoch.Add(time.Second)); c == a {
		t.Fatal("a different SOURCE_DATE_EPOCH gave the same digest")
	}
}

func TestLayerIgnoresFileMetadataOnDisk(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "lvms")
	if err := os.WriteFile(src, []byte("\x7fELF binary"), 0o600); err != nil {
		t.Fatal(err)
	}
	digest := func() string {
		tree := NewTree()
		if err := tree.AddFromDisk("usr/bin/lvms", src, 0o755); err != nil {
			t.Fatal(err)
		}
		return layerDigest(t, tree, epoch)
	}
	first := digest()
	if err := os.Chtimes(src, time.Now(), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(src, 0o777); err != nil {
		t.Fatal(err)
	}
	if second := digest(); second != first {
		t.Fatalf("mtime or mode on disk changed the layer: %s vs %s", first, second)
	}
}

func TestWriteTarHeaders(t *testing.T) {
	tree := NewTree()
	tree.AddFile("usr/sbin/lvm", 0o755, []byte("lvm"))
	tree.Add(Entry{Path: "usr/sbin/lvs", Type: tar.TypeLink, Link: "usr/sbin/lvm"})
	tree.AddDir("home/nonroot", 0o700, 65532, 65532)
	var buf bytes.Buffer
	if err := tree.WriteTar(&buf, epoch); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	var names []string
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, hdr.Name)
		if !hdr.ModTime.Equal(epoch) || hdr.Uname != "" || hdr.Gname != "" || !hdr.AccessTime.IsZero() {
			t.Errorf(
				"%s: time %v uname %q gname %q atime %v",
				hdr.Name,
				hdr.ModTime,
				hdr.Uname,
				hdr.Gname,
				hdr.AccessTime,
			)
		}
		if hdr.Name == "home/nonroot/" && (hdr.Uid != 65532 || hdr.Mode != 0o700) {
			t.Errorf("home/nonroot: uid %d mode %o", hdr.Uid, hdr.Mode)
		}
	}
	want := []string{"home/", "home/nonroot/", "usr/", "usr/sbin/", "usr/sbin/lvm", "usr/sbin/lvs"}
	if len(names) != len(want) {
		t.Fatalf("entries %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("entries %v, want %v (sorted, parents created, hard links last)", names, want)
		}
	}
}

func TestResolve(t *testing.T) {
	tree := NewTree()
	AddMergedUsrLinks(tree)
	tree.AddFile("usr/lib/x86_64-linux-gnu/libc.so.6", 0o644, nil)
	tree.AddSymlink("usr/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
	tree.AddFile("usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 0o755, nil)
	tree.AddSymlink("usr/lib/x86_64-linux-gnu/libz.so.1", "libz.so.1.2.13")
	tree.AddSymlink("loop", "loop")
	for p, want := range map[string]bool{
		"lib/x86_64-linux-gnu/libc.so.6":       true,
		"/lib64/ld-linux-x86-64.so.2":          true,
		"usr/lib/x86_64-linux-gnu/libz.so.1":   false, // dangling
		"loop":                                 false,
		"lib/x86_64-linux-gnu/libc.so.6/x":     false,
		"usr/lib/x86_64-linux-gnu/../../lib64": true,
	} {
		if _, got := tree.Resolve(p); got != want {
			t.Errorf("Resolve(%q) = %v, want %v", p, got, want)
		}
	}
}
