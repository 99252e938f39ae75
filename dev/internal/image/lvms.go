package image

import (
	"archive/tar"
	"context"
	"fmt"
	"strings"
	"time"
)

// Lvms builds the product image: layer 1 holds the Debian host tools and their dependency
// closure (merged /usr, no docs), layer 2 /usr/bin/lvms and the SBOM. The image runs as
// nonroot; the node DaemonSet sets runAsUser 0 itself.
func (b *Builder) Lvms(ctx context.Context) (Result, error) {
	ref := b.opts.LvmsRef
	if ref == "" {
		ref = DefaultLvmsRef
	}
	// The Makefile's LDFLAGS, plus -s -w: no symbol table or DWARF (a third of the binary; stack
	// traces keep their function names and lines, and the build information stays readable).
	ldflags := fmt.Sprintf("-s -w -X %s/internal/version.Version=%s -X %s/internal/version.GitCommit=%s",
		Module, b.opts.Version, Module, b.opts.Commit)
	b.progress("image %s: go build ./cmd/lvms (version %s)", ref, b.opts.Version)
	bin, file, err := b.goBuild(ctx, "./cmd/lvms", ldflags)
	if err != nil {
		return Result{}, err
	}
	debs, err := b.apt.Resolve(ctx, lvmsPackages)
	if err != nil {
		return Result{}, err
	}
	b.progress("image %s: %d Debian packages (cache %s)", ref, len(debs), b.opts.DebCacheDir)
	tools, err := toolsTree(ctx, debs)
	if err != nil {
		return Result{}, fmt.Errorf("image %s: %w", ref, err)
	}
	app := NewTree()
	if err := app.AddFromDisk("usr/bin/lvms", file, 0o755); err != nil {
		return Result{}, err
	}
	bin.Path = "/usr/bin/lvms"
	sbom, err := SBOM{
		Image:    ref,
		Version:  b.opts.Version,
		Created:  b.opts.Epoch,
		Debs:     debs,
		Binaries: []GoBinary{bin},
	}.JSON()
	if err != nil {
		return Result{}, err
	}
	app.AddFile("usr/share/doc/lvms/sbom.spdx.json", 0o644, sbom)
	b.progress("image %s: host tools %d files %s MiB, lvms %s MiB (uncompressed)",
		ref, len(tools.entries), MiB(tools.Size()), MiB(app.Size()))
	spec := Spec{
		Ref: ref, Created: b.opts.Epoch,
		Entrypoint: []string{"/usr/bin/lvms"},
		User:       fmt.Sprintf("%d:%d", nonrootUID, nonrootUID),
		Env:        []string{DefaultPath},
		Layers: []Layer{
			{Tree: tools, CreatedBy: "lvms-dev image build: Debian 12 packages " + debNames(debs)},
			{Tree: app, CreatedBy: "lvms-dev image build: /usr/bin/lvms " + b.opts.Version},
		},
		Labels: map[string]string{
			LabelSource:      "https://" + Module,
			LabelRevision:    b.opts.Commit,
			LabelVersion:     b.opts.Version,
			LabelCreated:     b.opts.Epoch.UTC().Format(time.RFC3339),
			LabelTitle:       "lvms",
			LabelDescription: "LVM storage for Kubernetes: operator, CSI driver and node agent, with lvm2 and filesystem tools",
			LabelLicenses:    "Apache-2.0",
		},
	}
	return b.write(spec, "lvms", sbom)
}

// toolsTree unpacks debs into a merged-/usr tree with base files and checks that it is complete:
// lvm.conf is there and every ELF file finds its libraries.
func toolsTree(ctx context.Context, debs []Deb) (*Tree, error) {
	t := NewTree()
	for _, d := range debs {
		if err := UnpackDeb(ctx, t, d.File); err != nil {
			return nil, err
		}
	}
	for _, p := range lvmsRemoved {
		t.RemoveAll(p)
	}
	AddMergedUsrLinks(t)
	baseFiles(t)
	t.AddDir("run/lock", 0o755, 0, 0)
	t.AddDir("run/lvm", 0o700, 0, 0)
	if e, ok := t.Resolve("etc/lvm/lvm.conf"); !ok || e.Type != tar.TypeReg {
		return nil, fmt.Errorf("no /etc/lvm/lvm.conf from the lvm2 package")
	}
	for _, tool := range []string{"lvm", "mkfs.ext4", "resize2fs", "mkfs.xfs", "xfs_growfs", "mkfs.btrfs",
		"btrfs", "btrfstune", "blkid", "wipefs", "lsblk", "nsenter", "mount", "umount", "fsck", "dmsetup",
		"thin_check", "cryptsetup"} {
		if !hasCommand(t, tool) {
			return nil, fmt.Errorf("no %s in /usr/sbin or /usr/bin", tool)
		}
	}
	if err := CheckSharedLibs(t); err != nil {
		return nil, fmt.Errorf("missing shared libraries: %w", err)
	}
	return t, nil
}

func hasCommand(t *Tree, name string) bool {
	for _, dir := range []string{"usr/sbin/", "usr/bin/"} {
		if _, ok := t.Resolve(dir + name); ok {
			return true
		}
	}
	return false
}

func debNames(debs []Deb) string {
	names := make([]string, len(debs))
	for i, d := range debs {
		names[i] = d.Name + "=" + d.Version
	}
	return strings.Join(names, " ")
}
