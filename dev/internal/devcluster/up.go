package devcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// UpOptions configure `lvms-dev up`.
type UpOptions struct {
	// StateDir holds everything of the cluster.
	StateDir string
	// RepoDir is the repository root; found above the working directory when empty.
	RepoDir string
	// KubeAssets and CSITools are the binary directories; hack/kube-assets.sh and
	// hack/csi-tools.sh build or find them when empty.
	KubeAssets, CSITools string
	// Nodes, Disks, DiskSize, MemoryMiB and MaxPods shape the guest nodes; MemoryMiB 0 is
	// DefaultMemoryMiB, MaxPods 0 DefaultMaxPods.
	Nodes, Disks, MemoryMiB, MaxPods int
	DiskSize                         int64
	// ImagesDir holds the OCI archives the nodes import (<repo>/_output/images when empty).
	ImagesDir string
	// ExtraImagesDirs hold more OCI archives the nodes import: every *.tar in them (the storage
	// e2e suite's images, hack/conformance.sh).
	ExtraImagesDirs []string
	// NoProduct leaves the product out of the cluster (to try the nodes alone).
	NoProduct bool
	// SchedulerExtender installs the product with its scheduler extender and pod webhook
	// (config/components/scheduler-extender) and configures the kube-scheduler to call it.
	SchedulerExtender bool
	// SnapshotMetadata installs the product with its snapshot metadata service
	// (config/components/snapshot-metadata) and the SnapshotMetadataService CRD, and imports the
	// images of the external-snapshot-metadata sidecar and of snapshot-metadata-lister.
	SnapshotMetadata bool
	// Evacuator installs the product with its evacuator (config/components/evacuator).
	Evacuator bool
	// Profiling installs the product with config/components/profiling (pprof on the metrics
	// endpoints of the operator and the node agents).
	Profiling bool
	// APIServerArgs and ControllerManagerArgs are more kube-apiserver and kube-controller-manager
	// flags (the scale benchmark's audit log and node grace period).
	APIServerArgs, ControllerManagerArgs []string
	// Users get a kubeconfig each, <state>/kubeconfig-<user>, with a client certificate for that user
	// in group system:masters: components that must be told apart in the audit log.
	Users []string
	// Timeout bounds the wait for the cluster after the supervisor started.
	Timeout time.Duration
	// Out receives progress.
	Out io.Writer
}

// Up builds the binaries, starts the supervisor and waits until the cluster is usable.
func Up(ctx context.Context, o UpOptions) error {
	l, err := NewLayout(o.StateDir)
	if err != nil {
		return err
	}
	if pid, _ := readPID(l.PIDFile("supervisor")); aliveUnder(pid, l.Dir) {
		return fmt.Errorf(
			"a dev cluster is already running in %s (supervisor pid %d); run lvms-dev down first",
			l.Dir,
			pid,
		)
	}
	if err := resetState(l); err != nil {
		return err
	}
	cfg, err := prepare(ctx, l, o)
	if err != nil {
		return err
	}
	if err := writeJSON(l.Config(), cfg); err != nil {
		return err
	}
	start := time.Now()
	sup, err := spawnSupervisor(l, cfg.LVMSDev)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "supervisor started (pid %d), log %s\n", sup.pid, l.Log("supervisor"))
	if err := follow(ctx, l, sup, o.Timeout, o.Out); err != nil {
		return err
	}
	fmt.Fprintf(
		o.Out,
		"dev cluster up in %s (state %s)\n\n  export KUBECONFIG=%s\n  kubectl get nodes\n\nstop it with: lvms-dev down --state-dir %s\n",
		time.Since(start).Round(100*time.Millisecond),
		l.Dir,
		l.Kubeconfig(),
		l.Dir,
	)
	return nil
}

// resetState empties the state directory except the binaries, after leftovers are gone.
func resetState(l Layout) error {
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	entries, err := os.ReadDir(l.Dir)
	if err != nil {
		return fmt.Errorf("read state dir: %w", err)
	}
	if leftovers := findLeftovers(l); len(leftovers) > 0 {
		return fmt.Errorf(
			"processes of an earlier dev cluster are still running in %s (%s); run lvms-dev down first",
			l.Dir,
			strings.Join(leftovers, ", "),
		)
	}
	for _, e := range entries {
		if e.Name() == "bin" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(l.Dir, e.Name())); err != nil {
			return fmt.Errorf("clean state dir: %w", err)
		}
	}
	for _, d := range []string{l.Logs(), l.Run(), l.Bin(), l.Guests()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	return nil
}

// prepare finds the repository, the images and the binaries and builds lvms-dev and guestbridge
// (the product runs from its image).
func prepare(ctx context.Context, l Layout, o UpOptions) (Config, error) {
	cfg := Config{
		RepoDir:           o.RepoDir,
		KubeAssets:        o.KubeAssets,
		CSITools:          o.CSITools,
		Nodes:             o.Nodes,
		Disks:             o.Disks,
		DiskSize:          o.DiskSize,
		MemoryMiB:         o.MemoryMiB,
		MaxPods:           o.MaxPods,
		SchedulerExtender: o.SchedulerExtender,
		SnapshotMetadata:  o.SnapshotMetadata,
		Evacuator:         o.Evacuator,
		Profiling:         o.Profiling,
		APIServerArgs:     o.APIServerArgs,
		KCMArgs:           o.ControllerManagerArgs,
		Users:             o.Users,
		LVMSDev:           filepath.Join(l.Bin(), "lvms-dev"),
		GuestBridge:       filepath.Join(l.Bin(), "guestbridge"),
	}
	if cfg.MemoryMiB <= 0 {
		cfg.MemoryMiB = DefaultMemoryMiB
	}
	if cfg.MaxPods <= 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	var err error
	if cfg.RepoDir == "" {
		if cfg.RepoDir, err = findRepo(); err != nil {
			return cfg, err
		}
	}
	if o.ImagesDir == "" {
		o.ImagesDir = filepath.Join(cfg.RepoDir, "_output", "images")
	}
	// A cluster without guest nodes (the scale benchmark's) imports no image.
	if o.Nodes > 0 {
		if cfg.Images, err = findImages(o.ImagesDir, o.SnapshotMetadata); err != nil {
			return cfg, err
		}
	}
	for _, dir := range o.ExtraImagesDirs {
		// The guests see the host's file system at the same absolute paths.
		if dir, err = filepath.Abs(dir); err != nil {
			return cfg, fmt.Errorf("images directory: %w", err)
		}
		extra, err := findImages(dir, false)
		if err != nil {
			return cfg, err
		}
		cfg.Images = append(cfg.Images, extra...)
	}
	if !o.NoProduct {
		cfg.ProductDigestFile = filepath.Join(o.ImagesDir, "lvms.digest")
		if cfg.ProductDigest, err = readDigest(cfg.ProductDigestFile); err != nil {
			return cfg, err
		}
	}
	steps := []struct {
		what string
		dir  *string
		run  func() (string, error)
	}{
		{
			"kube binaries",
			&cfg.KubeAssets,
			func() (string, error) { return script(ctx, l, cfg.RepoDir, "kube-assets.sh") },
		},
		{"CSI tools", &cfg.CSITools, func() (string, error) { return script(ctx, l, cfg.RepoDir, "csi-tools.sh") }},
	}
	for _, s := range steps {
		if *s.dir != "" {
			continue
		}
		if err := timed(o.Out, s.what, func() (err error) { *s.dir, err = s.run(); return err }); err != nil {
			return cfg, err
		}
	}
	err = timed(o.Out, "go build lvms-dev, guestbridge", func() error {
		if err := goBuild(ctx, l, cfg.RepoDir, cfg.LVMSDev, "./dev/cmd/lvms-dev"); err != nil {
			return err
		}
		return goBuild(ctx, l, cfg.RepoDir, cfg.GuestBridge, "./dev/internal/devcluster/bridge/guestbridge")
	})
	return cfg, err
}

// DefaultMemoryMiB is a guest's memory: a node holds containerd's images and the pods' writable
// layers on tmpfs besides kubelet (~90 MB) and containerd (~50 MB).
const DefaultMemoryMiB = 1536

// DefaultMaxPods is a node's pod limit (the kubelet's maxPods): enough for the demo and the e2e
// suite with room to spare; make bench-cluster raises it for fifty claims per node (--max-pods).
const DefaultMaxPods = 40

// hostOnlyImages are archives of components the dev cluster runs as host processes (cluster
// add-ons, not the product): the nodes do not import them, which saves a guest import each.
var hostOnlyImages = map[string]bool{"snapshot-controller.tar": true}

// findImages lists the OCI archives in dir that the nodes import: the images of the snapshot
// metadata service only with snapshotMetadata (each import costs a guest's memory), and then all
// of them.
func findImages(dir string, snapshotMetadata bool) ([]string, error) {
	all, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	tars := slices.DeleteFunc(all, func(t string) bool {
		name := filepath.Base(t)
		return hostOnlyImages[name] || !snapshotMetadata && slices.Contains(snapshotMetadataImages, name)
	})
	if len(tars) == 0 {
		return nil, fmt.Errorf("no OCI archives (*.tar) in %s: build them with lvms-dev image build", dir)
	}
	if snapshotMetadata {
		for _, name := range snapshotMetadataImages {
			if !slices.Contains(tars, filepath.Join(dir, name)) {
				return nil, fmt.Errorf("no %s in %s: build it with lvms-dev image build --only sidecars", name, dir)
			}
		}
	}
	for _, t := range tars {
		if strings.ContainsAny(t, ": \t\n") {
			return nil, fmt.Errorf("image archive path %q holds a colon or white space", t)
		}
	}
	return tars, nil
}

// timed runs fn and reports how long it took.
func timed(out io.Writer, what string, fn func() error) error {
	start := time.Now()
	fmt.Fprintf(out, "%s …\n", what)
	if err := fn(); err != nil {
		return err
	}
	fmt.Fprintf(out, "%-28s ready in %s\n", what, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// findRepo returns the nearest ancestor of the working directory holding hack/kube-assets.sh.
func findRepo() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "hack", "kube-assets.sh")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf(
				"no repository (hack/kube-assets.sh) above %s; run from the checkout or pass --repo",
				wd,
			)
		}
	}
}

// script runs hack/<name> and returns the last line of its output (a directory).
func script(ctx context.Context, l Layout, repo, name string) (string, error) {
	logPath := l.Log(strings.TrimSuffix(name, ".sh"))
	f, err := os.Create(logPath)
	if err != nil {
		return "", fmt.Errorf("create log: %w", err)
	}
	defer f.Close()
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repo, "hack", name))
	cmd.Dir = repo
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&stdout, f), f
	if err := cmd.Run(); err != nil {
		return "", failure("hack/"+name, logPath, err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	dir := strings.TrimSpace(lines[len(lines)-1])
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", failure("hack/"+name, logPath, fmt.Errorf("last line %q is not a directory", dir))
	}
	return dir, nil
}

// goBuild builds a static binary (guestbridge runs in the guests).
func goBuild(ctx context.Context, l Layout, repo, out, pkg string) error {
	logPath := l.Log("go-build")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = repo
	if rest, ok := strings.CutPrefix(pkg, "./dev/"); ok { // a package of the dev tooling's module
		cmd.Dir, cmd.Args[len(cmd.Args)-1] = filepath.Join(repo, "dev"), "./"+rest
	}
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	if werr := os.WriteFile(logPath, b, 0o644); werr != nil {
		return errors.Join(fmt.Errorf("go build %s: %w", pkg, err), werr)
	}
	if err != nil {
		return failure("go build "+pkg, logPath, err)
	}
	return nil
}

// supervisor is the `lvms-dev supervise` process up started.
type supervisor struct {
	pid    int
	exited chan struct{} // closed once the process has exited and been reaped
	how    string        // how it exited ("exit status 1", "signal: killed"); set before exited closes
}

// spawnSupervisor starts `lvms-dev supervise` in its own session, logging to logs/supervisor.log.
func spawnSupervisor(l Layout, lvmsDev string) (*supervisor, error) {
	f, err := os.OpenFile(l.Log("supervisor"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open supervisor log: %w", err)
	}
	defer f.Close()
	cmd := exec.Command(lvmsDev, "supervise", "--state-dir", l.Dir)
	cmd.Dir = l.Dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start supervisor: %w", err)
	}
	s := &supervisor{pid: cmd.Process.Pid, exited: make(chan struct{})}
	// Reap it if it exits while we still run; it outlives us otherwise.
	go func() {
		_ = cmd.Wait()
		s.how = cmd.ProcessState.String()
		close(s.exited)
	}()
	return s, nil
}

// follow copies the supervisor's log to out until the cluster is ready, failed, the supervisor
// died, or timeout passed. Whether the supervisor lives comes from its reaping, not from /proc:
// cmd.Start returns while the kernel still builds the new image, and /proc/<pid>/cmdline is empty
// until it has (aliveUnder then says gone, as it did for bench runs whose supervisor was fine).
func follow(ctx context.Context, l Layout, sup *supervisor, timeout time.Duration, out io.Writer) error {
	f, err := os.Open(l.Log("supervisor"))
	if err != nil {
		return fmt.Errorf("open supervisor log: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	deadline := time.Now().Add(timeout)
	var partial string
	for {
		for {
			line, err := r.ReadString('\n')
			partial += line
			if err != nil {
				break
			}
			fmt.Fprint(out, "  "+partial)
			partial = ""
		}
		if _, err := os.Stat(l.Ready()); err == nil {
			return nil
		}
		if b, err := os.ReadFile(l.Failed()); err == nil {
			// The supervisor tears down what it started; return once it is gone.
			select {
			case <-sup.exited:
			case <-ctx.Done():
			case <-time.After(supervisorGrace):
			}
			return fmt.Errorf("dev cluster failed to start: %s", bytes.TrimSpace(b))
		}
		select {
		case <-sup.exited:
			return failure("supervisor", l.Log("supervisor"), fmt.Errorf("exited (%s)", sup.how))
		default:
		}
		if time.Now().After(deadline) {
			return failure(
				"dev cluster",
				l.Log("supervisor"),
				fmt.Errorf("not ready after %s; it keeps running, see lvms-dev status", timeout),
			)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the dev cluster: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
