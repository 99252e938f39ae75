package image

import (
	"archive/tar"
	"bytes"
	"testing"
)

func debTar(t *testing.T, entries []tar.Header) *bytes.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		data := []byte("data of " + h.Name)
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(buf.Bytes())
}

func TestAddTarMergesUsrAndDropsDocs(t *testing.T) {
	tree := NewTree()
	err := addTar(tree, debTar(t, []tar.Header{
		{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "./sbin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "./sbin/mke2fs", Typeflag: tar.TypeReg, Mode: 0o755},
		{Name: "./sbin/mkfs.ext4", Typeflag: tar.TypeLink, Linkname: "./sbin/mke2fs"},
		{Name: "./sbin/lvs", Typeflag: tar.TypeSymlink, Linkname: "lvm"},
		{
			Name:     "./lib/x86_64-linux-gnu/libfoo.so.1",
			Typeflag: tar.TypeSymlink,
			Linkname: "../../usr/lib/x86_64-linux-gnu/libfoo.so.1.0",
		},
		{Name: "./lib64/ld-linux-x86-64.so.2", Typeflag: tar.TypeSymlink, Linkname: "/lib/x86_64-linux-gnu/ld.so"},
		{Name: "./etc/lvm/lvm.conf", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "./usr/share/doc/lvm2/changelog.gz", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "./usr/share/doc/lvm2/copyright", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "./usr/share/man/man8/lvm.8.gz", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "./usr/share/doc/lvm2/examples/x", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "./usr/share/man/man8/lvs.8.gz", Typeflag: tar.TypeLink, Linkname: "./usr/share/man/man8/lvm.8.gz"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Entry{
		"usr/sbin/mke2fs":    {Type: tar.TypeReg},
		"usr/sbin/mkfs.ext4": {Type: tar.TypeLink, Link: "usr/sbin/mke2fs"},
		"usr/sbin/lvs":       {Type: tar.TypeSymlink, Link: "/sbin/lvm"},
		"usr/lib/x86_64-linux-gnu/libfoo.so.1": {
			Type: tar.TypeSymlink,
			Link: "/usr/lib/x86_64-linux-gnu/libfoo.so.1.0",
		},
		"usr/lib64/ld-linux-x86-64.so.2": {Type: tar.TypeSymlink, Link: "/lib/x86_64-linux-gnu/ld.so"},
		"etc/lvm/lvm.conf":               {Type: tar.TypeReg},
		"usr/share/doc/lvm2/copyright":   {Type: tar.TypeReg},
	}
	for p, w := range want {
		e, ok := tree.Get(p)
		if !ok {
			t.Errorf("%s missing", p)
			continue
		}
		if e.Type != w.Type || e.Link != w.Link {
			t.Errorf("%s: type %q link %q, want %q %q", p, e.Type, e.Link, w.Type, w.Link)
		}
	}
	for _, p := range []string{"sbin", "sbin/mke2fs", "usr/share/doc/lvm2/changelog.gz", "usr/share/man",
		"usr/share/doc/lvm2/examples/x", "usr/share/man/man8/lvs.8.gz"} {
		if _, ok := tree.Get(p); ok {
			t.Errorf("%s should not be in the tree", p)
		}
	}
}

func TestUsrMerge(t *testing.T) {
	for in, want := range map[string]string{
		"./sbin/lvm": "usr/sbin/lvm", "/lib64": "usr/lib64", "bin/": "usr/bin",
		"usr/bin/x": "usr/bin/x", "etc/lvm": "etc/lvm", "binary/x": "binary/x", "libexec/x": "libexec/x",
	} {
		if got := UsrMerge(in); got != want {
			t.Errorf("UsrMerge(%q) = %q, want %q", in, got, want)
		}
	}
}
