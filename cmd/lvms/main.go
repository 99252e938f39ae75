// Command lvms is the single product binary of the LVM operator: the operator, the node agent,
// lvmd and the scheduler extender are its subcommands. Development tooling is dev/cmd/lvms-dev.
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
