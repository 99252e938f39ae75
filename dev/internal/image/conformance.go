package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// SuiteImages are the references of the images Kubernetes' storage e2e suite runs in its pods, as
// its -list-images prints them (hack/conformance.sh passes them). Every reference of a kind gets
// the same image under its own tag.
type SuiteImages struct {
	// Busybox are busybox references (registry.k8s.io/e2e-test-images/busybox:1.37.0-2).
	Busybox []string
	// Agnhost are agnhost references; AgnhostBinary is the agnhost program built from
	// k8s.io/kubernetes/test/images/agnhost at the suite's version (hack/conformance-tools.sh).
	Agnhost       []string
	AgnhostBinary string
	// Pause are pause references (registry.k8s.io/pause:3.10.2).
	Pause []string
	// HelloPopulator are the references of the hello populator that provisioning's "any volume
	// data source" spec deploys (registry.k8s.io/sig-storage/hello-populator:v1.0.1, from its
	// manifest, not -list-images): our own implementation (./hellopopulator), since the Go module
	// proxy refuses upstream's module.
	HelloPopulator []string
	// Debian are images of Debian packages, for the specs that need GNU tools: multiVolume's
	// glibc-dns-testing (GNU dd's iflag=direct, which busybox lacks) and the nginx image that
	// volumes' exec spec runs a script in.
	Debian []DebianImage
}

// DebianImage is an image of Debian packages with their dependencies, and busybox's applets for
// the commands they lack.
type DebianImage struct {
	Ref      string
	Packages []string
}

// Conformance builds the images of Kubernetes' storage e2e suite: busybox (Debian's static busybox
// with a link for every applet it has), agnhost (its program on the same busybox tree, whose shell
// its specs run, entrypoint /agnhost pause as upstream's), pause and the hello populator (ours).
// The nodes import them under the suite's references, so that no pod of the suite pulls.
func (b *Builder) Conformance(ctx context.Context, s SuiteImages) ([]Result, error) {
	if len(s.Busybox)+len(s.Agnhost)+len(s.Pause)+len(s.Debian)+len(s.HelloPopulator) == 0 {
		return nil, errors.New("no image references of the suite")
	}
	box, debs, err := b.busyboxTree(ctx, nil, true)
	if err != nil {
		return nil, err
	}
	sbom, err := SBOM{Image: "busybox", Version: debs[0].Version, Created: FixedEpoch, Debs: debs}.JSON()
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, ref := range s.Busybox {
		spec := Spec{
			Ref: ref, Created: FixedEpoch, Cmd: []string{"sh"}, Env: []string{DefaultPath},
			Layers: []Layer{{Tree: box, CreatedBy: "lvms-dev image build: busybox-static " + debs[0].Version}},
			Labels: map[string]string{LabelTitle: "busybox", LabelDescription: "busybox for the storage e2e suite"},
		}
		res, err := b.write(spec, archiveName(ref), sbom)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	agn, err := b.agnhostImages(box, debs, s)
	out = append(out, agn...)
	if err != nil {
		return out, err
	}
	for _, d := range s.Debian {
		res, err := b.debianImage(ctx, d)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	for _, p := range []struct {
		pkg, name, user string
		refs            []string
	}{
		{"./dev/internal/image/pause", "pause", fmt.Sprintf("%d:%d", nonrootUID, nonrootUID), s.Pause},
		// Root: its populate pods write onto a new filesystem, whose root directory is root's.
		{"./dev/internal/image/hellopopulator", "hello-populator", "", s.HelloPopulator},
	} {
		res, err := b.programImages(ctx, p.pkg, p.name, p.user, p.refs)
		out = append(out, res...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// programImages writes the images of one of our programs (the Go package pkg, built static) under
// refs: the program at /name, its entrypoint, run as user ("" for root).
func (b *Builder) programImages(ctx context.Context, pkg, name, user string, refs []string) ([]Result, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	bin, file, err := b.goBuild(ctx, pkg, "-s -w")
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, ref := range refs {
		res, err := b.staticImage(static{
			ref: ref, name: name, source: "https://" + Module, file: file, bin: bin,
			user: user, created: FixedEpoch, archive: archiveName(ref),
		})
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// agnhostImages writes the agnhost images: the busybox tree, /agnhost and its /agnhost-2 link.
func (b *Builder) agnhostImages(box *Tree, debs []Deb, s SuiteImages) ([]Result, error) {
	if len(s.Agnhost) == 0 {
		return nil, nil
	}
	if s.AgnhostBinary == "" {
		return nil, errors.New("agnhost references without an agnhost program")
	}
	bin, err := readGoBinary(s.AgnhostBinary)
	if err != nil {
		return nil, err
	}
	t := NewTree()
	if err := t.AddFromDisk("agnhost", s.AgnhostBinary, 0o755); err != nil {
		return nil, err
	}
	t.AddSymlink("agnhost-2", "agnhost")
	t.AddDir("uploads", 0o755, 0, 0)
	if err := CheckSharedLibs(t); err != nil {
		return nil, fmt.Errorf("agnhost: %w", err)
	}
	var out []Result
	for _, ref := range s.Agnhost {
		bin.Path = "/agnhost"
		sbom, err := SBOM{Image: ref, Version: tagOf(ref), Created: FixedEpoch, Debs: debs,
			Binaries: []GoBinary{bin}}.JSON()
		if err != nil {
			return out, err
		}
		spec := Spec{
			Ref: ref, Created: FixedEpoch, Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"},
			Env: []string{DefaultPath},
			Layers: []Layer{
				{Tree: box, CreatedBy: "lvms-dev image build: busybox-static " + debs[0].Version},
				{Tree: t, CreatedBy: "lvms-dev image build: /agnhost " + tagOf(ref)},
			},
			Labels: map[string]string{LabelTitle: "agnhost", LabelVersion: tagOf(ref),
				LabelSource: "https://github.com/kubernetes/kubernetes/tree/master/test/images/agnhost"},
		}
		res, err := b.write(spec, archiveName(ref), sbom)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// archiveName names a reference's archive by its last path element and tag: "busybox_1.37.0-2".
func archiveName(ref string) string {
	name := path.Base(ref)
	return strings.NewReplacer(":", "_", "@", "_").Replace(name)
}

// debianImage writes the image of d's packages, busybox and its applets.
func (b *Builder) debianImage(ctx context.Context, d DebianImage) (Result, error) {
	t, debs, err := b.busyboxTree(ctx, d.Packages, true)
	if err != nil {
		return Result{}, err
	}
	// tc's optional qdisc plugins (iproute2 comes with nginx): tc dlopens them, and q_atm's
	// library is only recommended.
	t.RemoveAll("usr/lib/x86_64-linux-gnu/tc")
	if err := CheckSharedLibs(t); err != nil {
		return Result{}, fmt.Errorf("image %s: %w", d.Ref, err)
	}
	sbom, err := SBOM{Image: d.Ref, Version: tagOf(d.Ref), Created: FixedEpoch, Debs: debs}.JSON()
	if err != nil {
		return Result{}, err
	}
	spec := Spec{
		Ref: d.Ref, Created: FixedEpoch, Cmd: []string{"sh"}, Env: []string{DefaultPath},
		Layers: []Layer{{Tree: t, CreatedBy: "lvms-dev image build: " + debNames(debs)}},
		Labels: map[string]string{LabelTitle: path.Base(d.Ref), LabelDescription: "Debian " +
			strings.Join(d.Packages, ", ") + " for the storage e2e suite"},
	}
	return b.write(spec, archiveName(d.Ref), sbom)
}

// busyboxTree is Debian's static busybox and the packages with their dependencies, with base files
// and links for busyboxApplets, or for every applet the binary has (busybox --list, run on the build
// host) when all is set, where the packages have no command of that name.
func (b *Builder) busyboxTree(ctx context.Context, packages []string, all bool) (*Tree, []Deb, error) {
	debs, err := b.apt.Resolve(ctx, append([]string{"busybox-static"}, packages...))
	if err != nil {
		return nil, nil, err
	}
	t := NewTree()
	for _, d := range debs {
		if err := UnpackDeb(ctx, t, d.File); err != nil {
			return nil, nil, err
		}
	}
	AddMergedUsrLinks(t)
	baseFiles(t)
	bb, ok := t.Resolve("usr/bin/busybox")
	if !ok || bb.Type != tar.TypeReg {
		return nil, nil, errors.New("busybox-static has no /bin/busybox")
	}
	applets := busyboxApplets
	if all {
		if applets, err = b.listApplets(ctx, bb.Data); err != nil {
			return nil, nil, err
		}
	}
	for _, applet := range applets {
		if !hasCommand(t, applet) {
			t.AddSymlink("usr/bin/"+applet, "busybox")
		}
	}
	if e, ok := t.Resolve("bin/sh"); !ok || e.Type != tar.TypeReg {
		return nil, nil, errors.New("busybox image: /bin/sh does not resolve to busybox")
	}
	return t, debs, nil
}

// listApplets runs busybox --list on the build host (an amd64 Linux, as the images are).
func (b *Builder) listApplets(ctx context.Context, busybox []byte) ([]string, error) {
	file := filepath.Join(b.work, "busybox")
	if err := os.WriteFile(file, busybox, 0o755); err != nil {
		return nil, fmt.Errorf("write busybox: %w", err)
	}
	out, err := exec.CommandContext(ctx, file, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list: %w", err)
	}
	var applets []string
	for _, a := range strings.Fields(string(out)) {
		if a != "busybox" && !strings.ContainsAny(a, "/.") {
			applets = append(applets, a)
		}
	}
	if len(applets) < len(busyboxApplets) {
		return nil, fmt.Errorf("busybox --list names %d applets, fewer than the workload image's %d",
			len(applets), len(busyboxApplets))
	}
	return applets, nil
}
