package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lvm-operator/lvm-operator/dev/internal/image"
)

// imageKinds are the values of `image build --only`.
var imageKinds = []string{"lvms", "workload", "pause", "sidecars"}

func newImageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build the OCI images reproducibly without a Docker daemon, and push them (docs/image.md)",
	}
	cmd.AddCommand(newImageBuildCommand(), newImagePushCommand(), newImageConformanceCommand(),
		newImageTopoLVMCommand())
	return cmd
}

type imageBuildFlags struct {
	out, debCache, version, commit, lvmsRef, csiTools, epoch string
	only                                                     []string
}

func newImageBuildCommand() *cobra.Command {
	var f imageBuildFlags
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build OCI image archives (<out>/<name>.tar, .digest, .spdx.json) for ctr import or push",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runImageBuild(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", filepath.Join("_output", "images"), "output directory")
	fl.StringSliceVar(&f.only, "only", imageKinds, "images to build: "+strings.Join(imageKinds, ","))
	fl.StringVar(&f.debCache, "deb-cache", defaultDebCache(), "cache of downloaded Debian packages")
	fl.StringVar(&f.version, "version", "", "version stamped into lvms (default: git describe --tags --always --dirty)")
	fl.StringVar(&f.commit, "commit", "", "commit stamped into lvms (default: git rev-parse HEAD)")
	fl.StringVar(&f.lvmsRef, "lvms-ref", image.DefaultLvmsRef, "reference of the product image")
	fl.StringVar(
		&f.csiTools,
		"csi-tools",
		"",
		"directory of the sidecar binaries (default: the last line of bash hack/csi-tools.sh)",
	)
	fl.StringVar(&f.epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"),
		"Unix time of every file and of the images (default: $SOURCE_DATE_EPOCH, else the commit time of HEAD)")
	return cmd
}

func runImageBuild(ctx context.Context, f imageBuildFlags) error {
	for _, k := range f.only {
		if !slices.Contains(imageKinds, k) {
			return fmt.Errorf("--only %q: want some of %s", k, strings.Join(imageKinds, ","))
		}
	}
	opts, err := imageOptions(ctx, f)
	if err != nil {
		return err
	}
	b, err := image.NewBuilder(opts)
	if err != nil {
		return err
	}
	defer b.Close()
	var results []image.Result
	for _, k := range imageKinds {
		if !slices.Contains(f.only, k) {
			continue
		}
		res, err := buildKind(ctx, b, k)
		results = append(results, res...)
		if err != nil {
			return err
		}
	}
	for _, r := range results {
		fmt.Printf("image %s digest %s size %s MiB (compressed)\n", r.Ref, r.Digest, image.MiB(r.Size))
		fmt.Printf("  %s\n", r.Archive)
	}
	return nil
}

func buildKind(ctx context.Context, b *image.Builder, kind string) ([]image.Result, error) {
	var one image.Result
	var err error
	switch kind {
	case "lvms":
		one, err = b.Lvms(ctx)
	case "workload":
		one, err = b.Workload(ctx)
	case "pause":
		one, err = b.Pause(ctx)
	default:
		return b.Sidecars(ctx)
	}
	if err != nil {
		return nil, err
	}
	return []image.Result{one}, nil
}

// imageOptions fills in the defaults that come from git and hack/csi-tools.sh.
func imageOptions(ctx context.Context, f imageBuildFlags) (image.Options, error) {
	repo, err := gitOutput(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return image.Options{}, err
	}
	if f.version == "" {
		if f.version, err = gitOutput(ctx, "describe", "--tags", "--always", "--dirty"); err != nil {
			return image.Options{}, err
		}
	}
	if f.commit == "" {
		if f.commit, err = gitOutput(ctx, "rev-parse", "HEAD"); err != nil {
			return image.Options{}, err
		}
	}
	if f.epoch == "" {
		if f.epoch, err = gitOutput(ctx, "log", "-1", "--format=%ct"); err != nil {
			return image.Options{}, err
		}
	}
	secs, err := strconv.ParseInt(f.epoch, 10, 64)
	if err != nil {
		return image.Options{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", f.epoch, err)
	}
	if f.csiTools == "" && slices.Contains(f.only, "sidecars") {
		if f.csiTools, err = csiToolsDir(ctx, repo); err != nil {
			return image.Options{}, err
		}
	}
	return image.Options{
		RepoDir: repo, OutDir: f.out, DebCacheDir: f.debCache, Version: f.version, Commit: f.commit,
		Epoch: time.Unix(secs, 0).UTC(), LvmsRef: f.lvmsRef, CSIToolsDir: f.csiTools, Progress: os.Stderr,
	}, nil
}

func gitOutput(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", args...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// csiToolsDir runs hack/csi-tools.sh (cached; builds the sidecars on first use) and returns the
// directory it prints last.
func csiToolsDir(ctx context.Context, repo string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repo, "hack", "csi-tools.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/csi-tools.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

func newImagePushCommand() *cobra.Command {
	var ref, archive string
	cmd := &cobra.Command{
		Use:   "push",
		Short: "Push an image archive to a registry (credentials from ~/.docker/config.json)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ref == "" {
				return fmt.Errorf("--ref REGISTRY/REPO:TAG is required")
			}
			d, err := image.Push(cmd.Context(), archive, ref)
			if err != nil {
				return err
			}
			fmt.Printf("pushed %s digest %s\n", ref, d)
			return nil
		},
	}
	cmd.Flags().StringVar(&ref, "ref", "", "where to push, REGISTRY/REPO:TAG")
	cmd.Flags().StringVar(
		&archive,
		"archive",
		filepath.Join("_output", "images", "lvms.tar"),
		"OCI archive written by image build",
	)
	return cmd
}

// defaultDebCache is where the image commands keep downloaded Debian packages by default:
// ${XDG_CACHE_HOME:-~/.cache}/lvms/debs, beside the other tools' caches.
func defaultDebCache() string {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "lvms", "debs")
}
