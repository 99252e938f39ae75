package devcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// kubectl runs kubectl with the admin kubeconfig, its output appended to logs/kubectl.log.
func (c *cluster) kubectl(ctx context.Context, args ...string) error {
	logPath := c.l.Log("kubectl")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open kubectl log: %w", err)
	}
	defer f.Close()
	fmt.Fprintf(f, "=== kubectl %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, c.kube("kubectl"), append([]string{"--kubeconfig=" + c.l.Kubeconfig()}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Run(); err != nil {
		return failure("kubectl "+args[0], logPath, err)
	}
	return nil
}

// manifestFiles lists the YAML manifests in dir (not kustomization.yaml).
func manifestFiles(dir string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var files []string
	for _, m := range matches {
		if filepath.Base(m) != "kustomization.yaml" {
			files = append(files, m)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no manifests in %s", dir)
	}
	return files, nil
}

// crdDirs are the directories of the CRDs the cluster has: the operator's, the VolumeSnapshot
// CRDs, and with the snapshot metadata service the SnapshotMetadataService CRD (all but the
// operator's from hack/csi-tools.sh).
func crdDirs(cfg Config) []string {
	dirs := []string{filepath.Join(cfg.RepoDir, "config", "crd", "bases"), filepath.Join(cfg.CSITools, "snapshot-crds")}
	if cfg.SnapshotMetadata {
		dirs = append(dirs, filepath.Join(cfg.CSITools, snapshotMetadataCRDs))
	}
	return dirs
}

// applyCRDs applies the CRDs of crdDirs and waits until they are served.
func (c *cluster) applyCRDs(ctx context.Context) error {
	return c.step("CRDs", func() error {
		args := []string{"apply", "--server-side", "--force-conflicts"}
		for _, dir := range crdDirs(c.cfg) {
			files, err := manifestFiles(dir)
			if err != nil {
				return err
			}
			for _, f := range files {
				args = append(args, "-f", f)
			}
		}
		if err := c.kubectl(ctx, args...); err != nil {
			return err
		}
		return c.kubectl(ctx, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
	})
}
