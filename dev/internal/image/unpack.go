package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"strings"
)

// mergedDirs are the top-level directories that, as on a Debian 12 system installed with
// merged /usr, are symlinks into /usr; files packages ship below them are moved there.
var mergedDirs = []string{"bin", "sbin", "lib", "lib64"}

// droppedPaths are left out of images: documentation, translations and what only an init
// system, udev, initramfs or an interactive shell would use. Copyright files stay.
var droppedPaths = []string{
	"usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "usr/share/lintian",
	"usr/share/bug", "usr/share/initramfs-tools", "usr/share/bash-completion", "usr/share/zsh",
	"usr/share/menu", "usr/share/polkit-1", "usr/lib/systemd", "usr/lib/udev", "usr/lib/tmpfiles.d",
	"etc/init.d", "etc/cron.d", "etc/cron.daily", "etc/cron.weekly", "etc/cron.monthly",
	"etc/logrotate.d", "etc/systemd",
}

// UsrMerge returns where p lands in a merged-/usr tree: "sbin/lvm" → "usr/sbin/lvm".
func UsrMerge(p string) string {
	p = cleanPath(p)
	for _, d := range mergedDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return "usr/" + p
		}
	}
	return p
}

// AddMergedUsrLinks adds the /bin, /sbin, /lib and /lib64 → usr/... symlinks.
func AddMergedUsrLinks(t *Tree) {
	for _, d := range mergedDirs {
		t.AddSymlink(d, "usr/"+d)
	}
}

func dropped(p string) bool {
	if strings.HasPrefix(p, "usr/share/doc/") && path.Base(p) == "copyright" {
		return false
	}
	for _, d := range droppedPaths {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// UnpackDeb adds the files of the Debian package file to t, as `dpkg-deb --fsys-tarfile` lists
// them (no maintainer scripts run), moved into /usr as UsrMerge says, without droppedPaths.
func UnpackDeb(ctx context.Context, t *Tree, file string) error {
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("dpkg-deb --fsys-tarfile %s: %w: %s", file, err, strings.TrimSpace(stderr.String()))
	}
	if err := addTar(t, bytes.NewReader(out)); err != nil {
		return fmt.Errorf("unpack %s: %w", file, err)
	}
	return nil
}

// addTar adds the entries of an uncompressed tar stream to t (see UnpackDeb).
func addTar(t *Tree, r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		orig := cleanPath(hdr.Name)
		p := UsrMerge(orig)
		if p == "" || dropped(p) {
			continue
		}
		e := Entry{Path: p, Mode: hdr.Mode & 0o7777, UID: hdr.Uid, GID: hdr.Gid}
		switch hdr.Typeflag {
		case tar.TypeDir:
			e.Type = tar.TypeDir
		case tar.TypeReg:
			e.Type = tar.TypeReg
			if e.Data, err = io.ReadAll(tr); err != nil {
				return fmt.Errorf("read %s: %w", hdr.Name, err)
			}
		case tar.TypeSymlink:
			e.Type, e.Link = tar.TypeSymlink, hdr.Linkname
			if p != orig && !path.IsAbs(hdr.Linkname) {
				// The link moved into /usr: keep it pointing where it pointed.
				e.Link = "/" + cleanPath(path.Join(path.Dir(orig), hdr.Linkname))
			}
		case tar.TypeLink:
			e.Type, e.Link = tar.TypeLink, UsrMerge(hdr.Linkname)
			if target, ok := t.Get(e.Link); !ok || target.Type != tar.TypeReg {
				continue // its target was dropped
			}
		default:
			return fmt.Errorf("%s: unsupported tar entry type %q", hdr.Name, hdr.Typeflag)
		}
		t.Add(e)
	}
}
