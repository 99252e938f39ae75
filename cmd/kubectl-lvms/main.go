// Command kubectl-lvms is the kubectl plugin of the LVM operator: `kubectl lvms status|disks|volumes|why`
// explain the cluster's LVM storage, and `kubectl lvms plan` previews an LVMCluster in dry-run
// (docs/kubectl-lvms.md). It is not part of the product image.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lvm-operator/lvm-operator/internal/kubectlplugin"
)

func main() {
	// controller-runtime's client logs nothing a user of the plugin needs; API warnings still reach
	// stderr through client-go.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	err := kubectlplugin.NewRootCommand(streams).ExecuteContext(ctx)
	stop()
	if err != nil {
		os.Exit(1)
	}
}
