package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lvm-operator/lvm-operator/dev/internal/image"
)

// newImageConformanceCommand builds the images of Kubernetes' storage e2e suite into a directory
// of their own (hack/conformance.sh), which lvms-dev up --extra-images-dir imports.
func newImageConformanceCommand() *cobra.Command {
	var s image.SuiteImages
	var out, debCache string
	var debian []string
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Build the storage e2e suite's busybox, agnhost, pause and hello-populator images (docs/conformance.md)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			repo, err := gitOutput(cmd.Context(), "rev-parse", "--show-toplevel")
			if err != nil {
				return err
			}
			b, err := image.NewBuilder(image.Options{
				RepoDir: repo, OutDir: out, DebCacheDir: debCache, Epoch: image.FixedEpoch, Progress: os.Stderr,
			})
			if err != nil {
				return err
			}
			defer b.Close()
			for _, d := range debian {
				ref, pkgs, ok := strings.Cut(d, "=")
				if !ok || ref == "" || pkgs == "" {
					return fmt.Errorf("--debian %q: want REF=PACKAGE,PACKAGE", d)
				}
				s.Debian = append(s.Debian, image.DebianImage{Ref: ref, Packages: strings.Split(pkgs, ",")})
			}
			results, err := b.Conformance(cmd.Context(), s)
			for _, r := range results {
				fmt.Printf("image %s digest %s size %s MiB (compressed)\n", r.Ref, r.Digest, image.MiB(r.Size))
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", filepath.Join("_output", "conformance-images"), "output directory")
	fl.StringVar(&debCache, "deb-cache", defaultDebCache(), "cache of downloaded Debian packages")
	fl.StringSliceVar(&s.Busybox, "busybox", nil, "busybox references the suite runs")
	fl.StringSliceVar(&s.Agnhost, "agnhost", nil, "agnhost references the suite runs")
	fl.StringVar(&s.AgnhostBinary, "agnhost-binary", "", "the agnhost program (hack/conformance-tools.sh)")
	fl.StringSliceVar(&s.Pause, "pause", nil, "pause references the suite runs")
	fl.StringSliceVar(&s.HelloPopulator, "hello-populator", nil,
		"hello-populator references the suite's manifest names (our implementation)")
	fl.StringArrayVar(&debian, "debian", nil,
		"REF=PACKAGE,PACKAGE: an image of Debian packages (and busybox for what they lack) the suite runs")
	return cmd
}
