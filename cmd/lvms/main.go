// Command lvms is the single binary of the LVM operator: the operator, the node agent, lvmd, the
// scheduler extender and the local development cluster are its subcommands.
package main

import (
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
