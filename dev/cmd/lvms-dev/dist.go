package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/lvm-operator/lvm-operator/dev/internal/dist"
)

// newDistCommand is `lvms-dev dist`: renders dist/install.yaml, the Helm chart and the OLM bundle
// from config/ (make dist).
func newDistCommand() *cobra.Command {
	var root string
	o := dist.Options{}
	cmd := &cobra.Command{
		Use:   "dist",
		Short: "Render dist/install.yaml, dist/monitoring.yaml, charts/lvms and bundle/ from the kustomize tree under config/",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigDir == "" {
				o.ConfigDir = filepath.Join(root, "config", "default")
			}
			if o.MonitoringDir == "" {
				o.MonitoringDir = filepath.Join(root, "config", "prometheus")
			}
			if o.ExtenderComponent == "" {
				o.ExtenderComponent = filepath.Join(root, "config", "components", "scheduler-extender")
			}
			if o.SnapshotMetadataComponent == "" {
				o.SnapshotMetadataComponent = filepath.Join(root, "config", "components", "snapshot-metadata")
			}
			if o.EvacuatorComponent == "" {
				o.EvacuatorComponent = filepath.Join(root, "config", "components", "evacuator")
			}
			if o.SampleFile == "" {
				o.SampleFile = filepath.Join(root, "config", "samples", "lvm_v1alpha1_lvmcluster.yaml")
			}
			files, err := dist.Files(o)
			if err != nil {
				return err
			}
			if err := dist.Write(root, files); err != nil {
				return err
			}
			fmt.Fprintf(
				cmd.OutOrStdout(),
				"dist: wrote %d files (%s, %s/, %s/)\n",
				len(files),
				dist.InstallFile,
				dist.ChartDir,
				dist.BundleDir,
			)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&root, "root", ".", "repository root")
	fl.StringVar(&o.ConfigDir, "config", "", "kustomize directory of the install (default <root>/config/default)")
	fl.StringVar(&o.SampleFile, "sample", "", "LVMCluster sample for the bundle's alm-examples")
	fl.StringVar(&o.MonitoringDir, "monitoring", "",
		"kustomize directory of the Prometheus Operator objects (default <root>/config/prometheus)")
	fl.StringVar(&o.Version, "version", "0.1.0", "release version of the chart and the bundle")
	fl.StringVar(&o.ExtenderComponent, "scheduler-extender", "", "kustomize component of the scheduler extender, "+
		"the chart's schedulerExtender.enabled (default <root>/config/components/scheduler-extender)")
	fl.StringVar(&o.SnapshotMetadataComponent, "snapshot-metadata", "", "kustomize component of the snapshot "+
		"metadata service: the chart's snapshotMetadata.enabled, and what the OLM bundle carries of it without its operator "+
		"flag (default <root>/config/components/snapshot-metadata)")
	fl.StringVar(&o.EvacuatorComponent, "evacuator", "", "kustomize component of the evacuator, the chart's "+
		"evacuator.enabled; the OLM bundle leaves it out (default <root>/config/components/evacuator)")
	return cmd
}
