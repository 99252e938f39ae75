package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// topolvmModule is the Go module of TopoLVM, the peer of make bench-peer.
const topolvmModule = "github.com/topolvm/topolvm"

// topolvmPackages are the Debian packages of what TopoLVM v0.41 runs inside its containers (read in
// its source): topolvm-node formats, mounts and grows filesystems through k8s.io/mount-utils
// (mount, umount, blkid, fsck, mkfs.<fstype>, resize2fs, xfs_growfs, btrfs) and runs /bin/findmnt,
// /sbin/blkid and wipefs itself; lvmd runs lvm2 on the node, `/usr/bin/nsenter -m -u -i -n -p -t 1
// /sbin/lvm`, so lvm2 is the node's and not in the image (TopoLVM's own image has none either).
// busybox adds the shell, rm and sleep of the pods' scripts.
var topolvmPackages = []string{"util-linux", "mount", "e2fsprogs", "xfsprogs", "btrfs-progs"}

// topolvmCommands are the programs TopoLVM's containers run, checked in the image.
var topolvmCommands = []string{
	"mount", "umount", "blkid", "findmnt", "wipefs", "nsenter", "blockdev", "fsck", "mkfs.ext4", "resize2fs",
	"mkfs.xfs", "xfs_growfs", "mkfs.btrfs", "sh", "rm", "sleep",
}

// topolvmLinks are the names hypertopolvm answers to (its argv[0]), linked at / as in TopoLVM's
// image.
var topolvmLinks = []string{"lvmd", "topolvm-node", "topolvm-controller", "topolvm-scheduler"}

// TopoLVMOptions say where the peer's binaries are.
type TopoLVMOptions struct {
	// Dir is the directory hack/topolvm-tools.sh prints: hypertopolvm and TopoLVM's LICENSE.
	Dir string
}

// TopoLVMRef is the reference of the peer's image at a TopoLVM version.
func TopoLVMRef(version string) string { return "lvms.local/topolvm:" + version }

// TopoLVM builds the image of TopoLVM for make bench-peer (docs/performance.md), never part of the
// product: layer 1 holds busybox and the Debian tools of topolvmPackages, layer 2 /hypertopolvm
// (built from the Go module proxy by hack/topolvm-tools.sh) with its links, TopoLVM's LICENSE, and
// /csi-registrar (dev/cmd/csi-registrar, which stands in for node-driver-registrar). It is tagged
// lvms.local/topolvm:<TopoLVM's version, from hypertopolvm's build information> and written as
// <OutDir>/topolvm.tar.
func (b *Builder) TopoLVM(ctx context.Context, o TopoLVMOptions) (Result, error) {
	hyper := filepath.Join(o.Dir, "hypertopolvm")
	bin, err := readGoBinary(hyper)
	if err != nil {
		return Result{}, err
	}
	version, err := moduleVersion(bin, topolvmModule)
	if err != nil {
		return Result{}, err
	}
	ref := TopoLVMRef(version)
	license, err := os.ReadFile(filepath.Join(o.Dir, "LICENSE"))
	if err != nil {
		return Result{}, fmt.Errorf("image %s: TopoLVM's license: %w", ref, err)
	}
	tools, debs, err := b.topolvmTools(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("image %s: %w", ref, err)
	}
	regBin, regFile, err := b.goBuild(ctx, "./dev/cmd/csi-registrar", "-s -w")
	if err != nil {
		return Result{}, err
	}
	app := NewTree()
	if err := app.AddFromDisk("hypertopolvm", hyper, 0o755); err != nil {
		return Result{}, err
	}
	for _, l := range topolvmLinks {
		app.AddSymlink(l, "hypertopolvm")
	}
	if err := app.AddFromDisk("csi-registrar", regFile, 0o755); err != nil {
		return Result{}, err
	}
	app.AddFile("LICENSE", 0o644, license)
	if err := CheckSharedLibs(app); err != nil {
		return Result{}, fmt.Errorf("image %s: %w", ref, err)
	}
	bin.Path, regBin.Path = "/hypertopolvm", "/csi-registrar"
	sbom, err := SBOM{Image: ref, Version: version, Created: FixedEpoch, Debs: debs,
		Binaries: []GoBinary{bin, regBin}}.JSON()
	if err != nil {
		return Result{}, err
	}
	app.AddFile("usr/share/doc/topolvm/sbom.spdx.json", 0o644, sbom)
	b.progress("image %s: tools %d files %s MiB, TopoLVM %s MiB (uncompressed)",
		ref, len(tools.entries), MiB(tools.Size()), MiB(app.Size()))
	spec := Spec{
		Ref: ref, Created: FixedEpoch, Entrypoint: []string{"/hypertopolvm"}, Env: []string{DefaultPath},
		Layers: []Layer{
			{Tree: tools, CreatedBy: "lvms-dev image topolvm: busybox-static and Debian 12 packages " + debNames(debs)},
			{Tree: app, CreatedBy: "lvms-dev image topolvm: /hypertopolvm " + version + ", /csi-registrar"},
		},
		Labels: map[string]string{
			LabelTitle: "topolvm", LabelVersion: version, LabelSource: "https://" + topolvmModule,
			LabelLicenses: "Apache-2.0",
			LabelDescription: "TopoLVM for the make bench-peer comparison (lvms dev tooling, not the product); " +
				"/csi-registrar is lvms' stand-in for node-driver-registrar",
		},
	}
	return b.write(spec, "topolvm", sbom)
}

// topolvmTools is busybox and topolvmPackages with their dependencies, checked to hold
// topolvmCommands and every shared library they link.
func (b *Builder) topolvmTools(ctx context.Context) (*Tree, []Deb, error) {
	t, debs, err := b.busyboxTree(ctx, topolvmPackages, false)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range lvmsRemoved {
		t.RemoveAll(p)
	}
	for _, c := range topolvmCommands {
		if !hasCommand(t, c) {
			return nil, nil, fmt.Errorf("no %s in /usr/sbin or /usr/bin", c)
		}
	}
	if err := CheckSharedLibs(t); err != nil {
		return nil, nil, fmt.Errorf("missing shared libraries: %w", err)
	}
	return t, debs, nil
}

// moduleVersion is the version of module in a binary's build information: the main module's, or
// the dependency's when the binary was built in a wrapper module.
func moduleVersion(bin GoBinary, module string) (string, error) {
	if bin.Info == nil {
		return "", errors.New("no build information")
	}
	if bin.Info.Main.Path == module && bin.Info.Main.Version != "" && bin.Info.Main.Version != "(devel)" {
		return bin.Info.Main.Version, nil
	}
	for _, d := range bin.Info.Deps {
		if d.Path == module {
			return d.Version, nil
		}
	}
	return "", fmt.Errorf("%s is not built from %s", bin.Path, module)
}
