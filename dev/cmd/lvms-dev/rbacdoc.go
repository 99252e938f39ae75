package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/lvm-operator/lvm-operator/dev/internal/rbacdoc"
)

// newRBACDocCommand is `lvms-dev rbac-doc`: renders docs/rbac.md from config/rbac (make manifests).
func newRBACDocCommand() *cobra.Command {
	var root string
	cmd := &cobra.Command{
		Use:   "rbac-doc",
		Short: "Render " + rbacdoc.OutputFile + ", the roles of each service account, from config/rbac",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			doc, err := rbacdoc.Generate(root)
			if err != nil {
				return err
			}
			out := filepath.Join(root, rbacdoc.OutputFile)
			if err := os.WriteFile(out, doc, 0o644); err != nil {
				return fmt.Errorf("write %s: %w", out, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rbac-doc: wrote %s\n", out)
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", ".", "repository root")
	return cmd
}
