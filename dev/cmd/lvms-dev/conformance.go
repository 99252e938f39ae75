package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lvm-operator/lvm-operator/dev/internal/conformance"
)

// newConformanceReportCommand prints the summary of the storage e2e suite's JUnit reports
// (hack/conformance.sh) and fails when a spec failed or none passed.
func newConformanceReportCommand() *cobra.Command {
	var reports []string
	cmd := &cobra.Command{
		Use:   "conformance-report --report CLASS=JUNIT.xml ...",
		Short: "Summarise the storage e2e suite's JUnit reports per suite, class and volume mode (docs/conformance.md)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(reports) == 0 {
				return fmt.Errorf("no --report CLASS=FILE")
			}
			var all []conformance.Spec
			for _, r := range reports {
				class, file, ok := strings.Cut(r, "=")
				if !ok || class == "" || file == "" {
					return fmt.Errorf("--report %q: want CLASS=FILE", r)
				}
				specs, err := conformance.ReadFile(class, file)
				if err != nil {
					return err
				}
				all = append(all, specs...)
			}
			cmd.SilenceUsage = true
			return conformance.Write(os.Stdout, all)
		},
	}
	cmd.Flags().StringArrayVar(&reports, "report", nil, "CLASS=FILE: the JUnit report of one device class")
	return cmd
}
