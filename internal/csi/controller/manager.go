package controller

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	ctrl "sigs.k8s.io/controller-runtime"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/csi/identity"
)

// AddToManager serves the CSI Identity and Controller services on endpoint (unix://path or a path) as a
// runnable of mgr, reading through mgr's cache and writing with mgr's client: what `lvms operator` runs
// for the external-provisioner, resizer and snapshotter sidecars, and what dev/sanity runs in a guest.
// crossNode is Options.CrossNode, namespace Options.Namespace.
func AddToManager(ctx context.Context, mgr ctrl.Manager, endpoint string,
	crossNode func(context.Context) (bool, error), namespace string,
) error {
	ctl, err := New(ctx, Options{Client: mgr.GetClient(), Cache: mgr.GetCache(), APIReader: mgr.GetAPIReader(),
		CrossNode: crossNode, Namespace: namespace})
	if err != nil {
		return fmt.Errorf("CSI controller service: %w", err)
	}
	srv, err := lvmcsi.NewServer(endpoint, ctrl.Log.WithName("csi"))
	if err != nil {
		return fmt.Errorf("CSI server: %w", err)
	}
	csi.RegisterIdentityServer(srv.GRPC, identity.New(nil))
	csi.RegisterControllerServer(srv.GRPC, ctl)
	if err := mgr.Add(srv); err != nil {
		return fmt.Errorf("add CSI server: %w", err)
	}
	return nil
}
