package main

import (
	"github.com/spf13/cobra"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "lvms",
		Short: "LVM storage for Kubernetes: operator, node agent, lvmd and tools",
		Long: "lvms turns the local disks of cluster nodes into dynamically provisioned LVM volumes.\n" +
			"Each component runs as a subcommand of this one binary.",
		SilenceUsage: true,
	}
	root.AddCommand(newVersionCommand(), newLvmdCommand(), newOperatorCommand(), newNodeCommand(), newDisksCommand(),
		newSchedulerCommand(), newSnapshotMetadataCommand(), newEvacuatorCommand())
	return root
}
