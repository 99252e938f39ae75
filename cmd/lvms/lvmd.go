package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// defaultLvmdSocket is where lvmd listens unless --socket or the config's
// socket-name says otherwise.
const defaultLvmdSocket = "/run/lvmd/lvmd.sock"

type lvmdFlags struct {
	config          string
	socket          string
	nsenter         bool
	commandTimeout  time.Duration
	refreshInterval time.Duration
	gracePeriod     time.Duration
	verbosity       int
	nodeName        string
	clusterID       string
}

func newLvmdCommand() *cobra.Command {
	var f lvmdFlags
	cmd := &cobra.Command{
		Use:   "lvmd",
		Short: "Serve the node-local LVM volume service (gRPC on a unix socket)",
		Long: "lvmd creates, grows, snapshots and removes logical volumes in the volume groups of the\n" +
			"device classes of its configuration file and reports their capacity, over gRPC on a unix\n" +
			"socket. It stops gracefully on SIGTERM or SIGINT.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLvmd(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "lvmd configuration file (YAML: device-classes, lvcreate-option-classes)")
	fl.StringVar(
		&f.socket,
		"socket",
		"",
		"unix socket to serve on (default: the config's socket-name, else "+defaultLvmdSocket+")",
	)
	fl.BoolVar(&f.nsenter, "nsenter", false, "run lvm in the namespaces of the host's PID 1 (in a pod with hostPID)")
	fl.DurationVar(&f.commandTimeout, "command-timeout", exec.DefaultTimeout,
		"deadline of each lvm command; its process group is killed after it")
	fl.DurationVar(
		&f.refreshInterval,
		"refresh-interval",
		lvmd.DefaultRefreshInterval,
		"period of the full LVM state read",
	)
	fl.DurationVar(&f.gracePeriod, "grace-period", 10*time.Second, "how long in-flight calls may take after SIGTERM")
	fl.IntVarP(&f.verbosity, "v", "v", 0, "log verbosity")
	fl.StringVar(&f.nodeName, "node-name", "",
		"tag every LV with lvms.node=<name>, and refuse a VG tagged for another node (empty: no node identity)")
	fl.StringVar(&f.clusterID, "cluster-id", "",
		"tag every LV with lvms.cluster=<id>, and refuse a VG tagged for another cluster (empty: none)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

func runLvmd(cmd *cobra.Command, f lvmdFlags) error {
	log := logr.FromSlogHandler(
		slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.Level(-f.verbosity)}),
	)
	ctx, stop := signal.NotifyContext(logr.NewContext(cmd.Context(), log), syscall.SIGTERM, os.Interrupt)
	defer stop()

	cfg, err := lvmd.LoadConfig(f.config)
	if err != nil {
		return err
	}
	socket := f.socket
	if socket == "" {
		socket = cfg.SocketName
	}
	if socket == "" {
		socket = defaultLvmdSocket
	}
	classes, err := lvmd.NewDeviceClassManager(cfg)
	if err != nil {
		return err
	}
	opts := []exec.HostOption{exec.WithTimeout(f.commandTimeout), exec.WithFinishOnCancel()}
	if f.nsenter {
		opts = append(opts, exec.WithPrefix(exec.NSEnterPrefix()...))
	}
	host := exec.NewHost(opts...)
	svc, err := lvmd.NewService(lvmd.Options{
		Executor:  host,
		LVMConfig: devices.NewLoopFilter(host, os.DirFS("/"), hostLVMConfDir(f.nsenter)).Config,
		Classes:   classes, RefreshInterval: f.refreshInterval,
		Identity: lvm.Identity{Node: f.nodeName, Cluster: f.clusterID},
	})
	if err != nil {
		return err
	}
	if err := svc.Refresh(ctx); err != nil {
		return fmt.Errorf("initial LVM state read: %w", err)
	}
	log.Info("Serving lvmd", "socket", socket, "deviceClasses", len(cfg.DeviceClasses), "nsenter", f.nsenter)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return svc.Run(gctx) })
	g.Go(func() error { return lvmd.Serve(gctx, svc, socket, f.gracePeriod) })
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	log.Info("lvmd stopped")
	return nil
}
