// Command lvms is the single binary of the LVM operator: the operator, the node agent, lvmd, the
// scheduler extender and the local development cluster are its subcommands.
package main

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
)

func main() {
	// The context ends on SIGTERM or SIGINT (a second signal exits at once).
	if err := newRootCommand().ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		os.Exit(1)
	}
}
