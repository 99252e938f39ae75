package image

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Module is the Go module of the product; LDFLAGS stamp its version package.
const Module = "github.com/lvm-operator/lvm-operator"

// nonrootUID is the user the product and pause images run as (distroless' "nonroot").
const nonrootUID = 65532

// Options configure a Builder.
type Options struct {
	// RepoDir is the root of this repository, where `go build` runs.
	RepoDir string
	// OutDir receives <name>.tar, <name>.digest and <name>.spdx.json per image.
	OutDir string
	// DebCacheDir caches downloaded Debian packages.
	DebCacheDir string
	// Version and Commit are stamped into lvms and its labels (the Makefile's VERSION, GIT_COMMIT).
	Version string
	Commit  string
	// Epoch is SOURCE_DATE_EPOCH: the time of every file, the config's Created and the history.
	Epoch time.Time
	// LvmsRef is the reference of the product image.
	LvmsRef string
	// CSIToolsDir holds the sidecar binaries hack/csi-tools.sh builds.
	CSIToolsDir string
	// Progress receives one line per step.
	Progress io.Writer
}

// Builder builds the images. Create it with NewBuilder.
type Builder struct {
	opts Options
	apt  *Apt
	work string
}

// NewBuilder returns a Builder with a scratch directory under OutDir; Close removes it.
func NewBuilder(opts Options) (*Builder, error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	out, err := filepath.Abs(opts.OutDir)
	if err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	opts.OutDir = out
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", opts.OutDir, err)
	}
	work, err := os.MkdirTemp(opts.OutDir, ".work-")
	if err != nil {
		return nil, fmt.Errorf("create scratch directory: %w", err)
	}
	return &Builder{opts: opts, work: work, apt: &Apt{CacheDir: opts.DebCacheDir, Exclude: lvmsExcluded}}, nil
}

// Close removes the scratch directory.
func (b *Builder) Close() error {
	if err := os.RemoveAll(b.work); err != nil {
		return fmt.Errorf("remove scratch directory: %w", err)
	}
	return nil
}

func (b *Builder) progress(format string, args ...any) {
	fmt.Fprintf(b.opts.Progress, format+"\n", args...)
}

// goBuild builds a static, trimmed Go binary of pkg (a path in this module) and returns its
// file and build information.
func (b *Builder) goBuild(ctx context.Context, pkg, ldflags string) (GoBinary, string, error) {
	out := filepath.Join(b.work, filepath.Base(pkg))
	args := []string{"build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = b.opts.RepoDir
	if rest, ok := strings.CutPrefix(pkg, "./dev/"); ok { // a package of the dev tooling's module
		cmd.Dir, cmd.Args[len(cmd.Args)-1] = filepath.Join(b.opts.RepoDir, "dev"), "./"+rest
	}
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return GoBinary{}, "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	bin, err := readGoBinary(out)
	return bin, out, err
}

func readGoBinary(file string) (GoBinary, error) {
	info, err := buildinfo.ReadFile(file)
	if err != nil {
		return GoBinary{}, fmt.Errorf("read Go build information of %s: %w", file, err)
	}
	return GoBinary{Path: file, Info: info}, nil
}

// baseFiles adds what every image has: /etc/passwd and /etc/group with root and nonroot
// (65532), /tmp, root's and nonroot's home directories.
func baseFiles(t *Tree) {
	t.AddFile("etc/passwd", 0o644, []byte(
		"root:x:0:0:root:/root:/sbin/nologin\n"+
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"+
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"))
	t.AddFile("etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\nnonroot:x:65532:\n"))
	t.AddDir("tmp", 0o1777, 0, 0)
	t.AddDir("root", 0o700, 0, 0)
	t.AddDir("home/nonroot", 0o700, nonrootUID, nonrootUID)
}

// write writes the SBOM next to the output and the image as an OCI archive, unless the archive
// there was written from the same inputs (inputsKey): then it is kept as it is, since the same
// inputs give the same archive.
func (b *Builder) write(spec Spec, name string, sbom []byte) (Result, error) {
	key, err := inputsKey(b.opts.RepoDir, spec, sbom)
	if err != nil {
		return Result{}, err
	}
	if res, ok := cached(b.opts.OutDir, name, key); ok {
		b.progress("image %s: unchanged inputs, keeping %s", spec.Ref, res.Archive)
		return res, nil
	}
	if err := forget(b.opts.OutDir, name); err != nil {
		return Result{}, err
	}
	if err := os.WriteFile(filepath.Join(b.opts.OutDir, name+".spdx.json"), sbom, 0o644); err != nil {
		return Result{}, fmt.Errorf("write SBOM of %s: %w", name, err)
	}
	img, err := spec.Image()
	if err != nil {
		return Result{}, err
	}
	res, err := WriteArchive(img, spec.Ref, b.opts.OutDir, name, spec.Created)
	if err != nil {
		return res, err
	}
	return res, record(b.opts.OutDir, name, key, res)
}

// static describes an image of one static Go binary.
type static struct {
	ref, name, source, user string
	file                    string
	bin                     GoBinary
	// created dates the image (and its files and SBOM).
	created time.Time
	// archive names the output files (default: name).
	archive string
}

// FixedEpoch dates the images that hold nothing of this repository (the CSI sidecars and the
// busybox workload): they do not take the commit's SOURCE_DATE_EPOCH, so a new commit leaves them,
// and their digests, as they were (and the next build keeps their archives, see cache.go). Like
// distroless images, they say 1970-01-01.
var FixedEpoch = time.Unix(0, 0).UTC()

// staticImage builds an image of one static Go binary at /<name> plus base files, as the
// upstream kubernetes-csi images (on distroless/static) are.
func (b *Builder) staticImage(s static) (Result, error) {
	t := NewTree()
	baseFiles(t)
	if err := t.AddFromDisk(s.name, s.file, 0o755); err != nil {
		return Result{}, err
	}
	s.bin.Path = "/" + s.name
	sbom, err := SBOM{Image: s.ref, Version: tagOf(s.ref), Created: s.created, Binaries: []GoBinary{s.bin}}.JSON()
	if err != nil {
		return Result{}, err
	}
	t.AddFile("usr/share/doc/"+s.name+"/sbom.spdx.json", 0o644, sbom)
	if err := CheckSharedLibs(t); err != nil {
		return Result{}, fmt.Errorf("image %s: %w", s.ref, err)
	}
	spec := Spec{
		Ref: s.ref, Created: s.created, Entrypoint: []string{"/" + s.name}, User: s.user,
		Env:    []string{DefaultPath},
		Layers: []Layer{{Tree: t, CreatedBy: "lvms-dev image build: /" + s.name + " " + tagOf(s.ref)}},
		Labels: map[string]string{
			LabelTitle: s.name, LabelVersion: tagOf(s.ref), LabelSource: s.source,
			LabelCreated: s.created.UTC().Format(time.RFC3339),
		},
	}
	b.progress("image %s: %d files, %s MiB uncompressed", s.ref, len(t.entries), MiB(t.Size()))
	archive := s.archive
	if archive == "" {
		archive = s.name
	}
	return b.write(spec, archive, sbom)
}

// Sidecars builds the kubernetes-csi sidecar images, tagged as the manifests name them, from
// the binaries in CSIToolsDir.
func (b *Builder) Sidecars(_ context.Context) ([]Result, error) {
	if b.opts.CSIToolsDir == "" {
		return nil, errors.New("no CSI tools directory (bash hack/csi-tools.sh | tail -1)")
	}
	var out []Result
	for _, s := range Sidecars {
		file := filepath.Join(b.opts.CSIToolsDir, s.Name)
		bin, err := readGoBinary(file)
		if err != nil {
			return out, err
		}
		// The operator pod runs its sidecars with runAsNonRoot, as the upstream images (distroless
		// nonroot) allow.
		res, err := b.staticImage(static{ref: s.Ref, name: s.Name, source: s.Source, file: file, bin: bin,
			user: fmt.Sprintf("%d:%d", nonrootUID, nonrootUID), created: FixedEpoch})
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// Pause builds lvms.local/pause:dev, containerd's sandbox image for the local cluster.
func (b *Builder) Pause(ctx context.Context) (Result, error) {
	bin, file, err := b.goBuild(ctx, "./dev/internal/image/pause", "-s -w")
	if err != nil {
		return Result{}, err
	}
	return b.staticImage(static{
		ref: PauseRef, name: "pause", source: "https://" + Module, file: file, bin: bin,
		user: fmt.Sprintf("%d:%d", nonrootUID, nonrootUID), created: b.opts.Epoch,
	})
}

// Workload builds lvms.local/workload:dev: Debian's static busybox and its applet links, for
// demo and e2e pods, and the e2e's transfer-probe (dev/cmd/transfer-probe). It runs as root so that
// it can write to freshly formatted volumes.
func (b *Builder) Workload(ctx context.Context) (Result, error) {
	t, debs, err := b.busyboxTree(ctx, nil, false)
	if err != nil {
		return Result{}, err
	}
	_, probe, err := b.goBuild(ctx, "./dev/cmd/transfer-probe", "-s -w")
	if err != nil {
		return Result{}, err
	}
	data, err := os.ReadFile(probe)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", probe, err)
	}
	t.AddFile("usr/bin/transfer-probe", 0o755, data)
	sbom, err := SBOM{Image: WorkloadRef, Version: "dev", Created: FixedEpoch, Debs: debs}.JSON()
	if err != nil {
		return Result{}, err
	}
	t.AddFile("usr/share/doc/workload/sbom.spdx.json", 0o644, sbom)
	spec := Spec{
		Ref: WorkloadRef, Created: FixedEpoch, Cmd: []string{"sh"}, Env: []string{DefaultPath},
		Layers: []Layer{{Tree: t, CreatedBy: "lvms-dev image build: busybox-static " + debs[0].Version}},
		Labels: map[string]string{LabelTitle: "workload", LabelDescription: "busybox for lvms demo and e2e pods"},
	}
	return b.write(spec, "workload", sbom)
}

// tagOf returns the tag of a reference, or "".
func tagOf(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[i+1:]
	}
	return ""
}
