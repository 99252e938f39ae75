//go:build image

package image

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests download Debian packages with apt and build real images; run them with
// `go -C dev test -tags image ./internal/image/` (docs/image.md).

func integrationBuilder(t *testing.T, out string) *Builder {
	t.Helper()
	repo, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		cache = filepath.Join(os.Getenv("HOME"), ".cache")
	}
	b, err := NewBuilder(Options{
		RepoDir: repo, OutDir: out, DebCacheDir: filepath.Join(cache, "lvms", "debs"),
		Version: "v0.0.0-test", Commit: "0123456789abcdef0123456789abcdef01234567",
		Epoch: time.Unix(1700000000, 0), Progress: testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestLvmsImageReproducible builds the product image twice into different directories and
// expects the same manifest digest and byte-identical archives.
func TestLvmsImageReproducible(t *testing.T) {
	ctx := context.Background()
	first, err := integrationBuilder(t, t.TempDir()).Lvms(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, err := integrationBuilder(t, t.TempDir()).Lvms(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first.Digest != second.Digest {
		t.Fatalf("two builds gave %s and %s", first.Digest, second.Digest)
	}
	a, _ := fileSHA256(first.Archive)
	b, _ := fileSHA256(second.Archive)
	if a != b {
		t.Fatalf("archives differ: %s vs %s", a, b)
	}
	t.Logf("digest %s, %s MiB compressed", first.Digest, MiB(first.Size))
}

// TestLvmsImageToolsRun unpacks the host tools layer and runs each tool through the image's own
// dynamic loader and libraries (no chroot needed), as the container would.
func TestLvmsImageToolsRun(t *testing.T) {
	ctx := context.Background()
	b := integrationBuilder(t, t.TempDir())
	debs, err := b.apt.Resolve(ctx, lvmsPackages)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := toolsTree(ctx, debs)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := extractTree(tree, root); err != nil {
		t.Fatal(err)
	}
	ld := filepath.Join(root, "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
	libs := filepath.Join(root, "usr/lib/x86_64-linux-gnu")
	for _, tc := range [][]string{
		{"usr/sbin/lvm", "version"}, {"usr/sbin/mkfs.ext4", "-V"}, {"usr/sbin/resize2fs", "-h"},
		{"usr/sbin/mkfs.xfs", "-V"}, {"usr/sbin/xfs_growfs", "-V"}, {"usr/bin/btrfs", "--version"},
		{"usr/sbin/mkfs.btrfs", "--version"}, {"usr/sbin/blkid", "-V"}, {"usr/sbin/wipefs", "-V"},
		{"usr/bin/lsblk", "-V"}, {"usr/bin/nsenter", "-V"}, {"usr/bin/mount", "-V"},
		{"usr/bin/umount", "-V"}, {"usr/sbin/dmsetup", "version"}, {"usr/sbin/thin_check", "-V"},
		{"usr/sbin/fsck", "-V"}, {"usr/sbin/cryptsetup", "--version"},
	} {
		out, err := exec.CommandContext(
			ctx,
			ld,
			append([]string{"--library-path", libs, filepath.Join(root, tc[0])}, tc[1:]...)...).CombinedOutput()
		if strings.Contains(string(out), "error while loading shared libraries") || isExecError(err) {
			t.Errorf("%s: %v: %s", tc[0], err, out)
			continue
		}
		t.Logf("%s %s: %s", tc[0], tc[1], strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0])
	}
}

// isExecError reports whether the loader could not start the tool at all (exit code 127).
func isExecError(err error) bool {
	var ee *exec.ExitError
	if err == nil {
		return false
	}
	if !errors.As(err, &ee) {
		return true
	}
	return ee.ExitCode() == 127
}

func extractTree(t *Tree, root string) error {
	for _, e := range t.Entries() {
		p := filepath.Join(root, e.Path)
		var err error
		switch e.Type {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			err = os.WriteFile(p, e.Data, os.FileMode(e.Mode&0o777)|0o200)
		case tar.TypeSymlink:
			link := e.Link
			if filepath.IsAbs(link) {
				link = filepath.Join(root, link)
			}
			err = os.Symlink(link, p)
		case tar.TypeLink:
			err = os.Link(filepath.Join(root, e.Link), p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
