package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lvm-operator/lvm-operator/dev/internal/image"
)

// newImageTopoLVMCommand builds the image of TopoLVM, the peer of make bench-peer, into a directory
// of its own (dev/bench/topolvm.sh), which lvms-dev up --images-dir imports.
func newImageTopoLVMCommand() *cobra.Command {
	var out, debCache, dir string
	cmd := &cobra.Command{
		Use: "topolvm",
		Short: "Build TopoLVM's image (hypertopolvm from hack/topolvm-tools.sh) for make bench-peer " +
			"(docs/performance.md); never part of the product",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			repo, err := gitOutput(ctx, "rev-parse", "--show-toplevel")
			if err != nil {
				return err
			}
			if dir == "" {
				if dir, err = topolvmToolsDir(cmd, repo); err != nil {
					return err
				}
			}
			b, err := image.NewBuilder(image.Options{
				RepoDir: repo, OutDir: out, DebCacheDir: debCache, Epoch: image.FixedEpoch, Progress: os.Stderr,
			})
			if err != nil {
				return err
			}
			defer b.Close()
			r, err := b.TopoLVM(ctx, image.TopoLVMOptions{Dir: dir})
			if err != nil {
				return err
			}
			fmt.Printf("image %s digest %s size %s MiB (compressed)\n", r.Ref, r.Digest, image.MiB(r.Size))
			fmt.Printf("  %s\n", r.Archive)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", filepath.Join("_output", "topolvm-images"), "output directory")
	fl.StringVar(&debCache, "deb-cache", defaultDebCache(), "cache of downloaded Debian packages")
	fl.StringVar(&dir, "topolvm-dir", "",
		"directory of hypertopolvm and TopoLVM's LICENSE (default: the last line of bash hack/topolvm-tools.sh)")
	return cmd
}

// topolvmToolsDir runs hack/topolvm-tools.sh (cached; builds hypertopolvm on first use) and returns
// the directory it prints last.
func topolvmToolsDir(cmd *cobra.Command, repo string) (string, error) {
	c := exec.CommandContext(cmd.Context(), "bash", filepath.Join(repo, "hack", "topolvm-tools.sh"))
	c.Stderr = os.Stderr
	out, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("hack/topolvm-tools.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}
