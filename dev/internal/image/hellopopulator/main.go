// Command hellopopulator is the project's own implementation of the hello populator, the example
// volume populator of Kubernetes' storage e2e suite (provisioning "should provision storage with
// any volume data source"): a test fixture, built into the image the suite's manifest names
// (lvms-dev image conformance), never part of the product. Upstream's (kubernetes-csi's
// lib-volume-populator) cannot be built here: the Go module proxy refuses its module.
//
// It takes upstream's flags and runs in one of two modes:
//
//   - --mode=controller --namespace=NS --image-name=IMAGE [--http-endpoint=:8080] [--kubeconfig=F]:
//     fills every claim whose dataSourceRef is a Hello (hello.example.com/v1alpha1) with the file
//     the Hello describes, by the volume populator protocol (controller.go), working in NS and
//     running IMAGE in populate mode; the HTTP endpoint serves /healthz.
//   - --mode=populate --file-name=F --file-contents=C [--mount-path=/mnt]: writes C and a final
//     newline to F (under the mount path unless absolute, such as a block device) and exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// options are the command-line flags of both modes.
type options struct {
	mode string
	// Controller mode: the namespace of the prime claims and pods, their image, the address of
	// the health endpoint ("" for none) and a kubeconfig when not in a pod.
	namespace, image, httpEndpoint, kubeconfig string
	// Populate mode.
	mountPath, fileName, fileContents string
}

func main() {
	var o options
	flag.StringVar(&o.mode, "mode", "", "controller or populate")
	flag.StringVar(&o.namespace, "namespace", "hello", "controller: namespace of the prime claims and populate pods")
	flag.StringVar(&o.image, "image-name", "", "controller: image of the populate pods (this program's)")
	flag.StringVar(&o.httpEndpoint, "http-endpoint", "", "controller: address of the /healthz endpoint, e.g. :8080")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "controller: kubeconfig (default: the pod's service account)")
	flag.StringVar(&o.mountPath, "mount-path", mountPath, "populate: where the volume's filesystem is mounted")
	flag.StringVar(&o.fileName, "file-name", "", "populate: the file to write, relative to --mount-path or absolute")
	flag.StringVar(&o.fileContents, "file-contents", "", "populate: what to write into it")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), unix.SIGTERM, unix.SIGINT)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "hello-populator: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	switch o.mode {
	case "controller":
		return runController(ctx, o)
	case "populate":
		return populate(o.mountPath, o.fileName, o.fileContents)
	}
	return fmt.Errorf("--mode %q: want controller or populate", o.mode)
}
