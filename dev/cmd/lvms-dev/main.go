// Command lvms-dev is the developers' and CI's tool, never shipped in the product image: the
// local cluster of User-mode Linux nodes (lvms-dev up|down|status|demo), the release renderer
// (dist) and the image builder. The product binary is cmd/lvms.
package main

import (
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	// The demo and the supervisor use controller-runtime clients; their own progress output is
	// what the user reads, not the client's log.
	ctrl.SetLogger(logr.Discard())
	// The context ends on SIGTERM or SIGINT (a second signal exits at once).
	if err := newRootCommand().ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := newDevCommand()
	root.AddCommand(
		newDevDemoCommand(),
		newDistCommand(),
		newImageCommand(),
		newRBACDocCommand(),
		newConformanceReportCommand(),
	)
	return root
}
