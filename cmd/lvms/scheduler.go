package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/lvm-operator/lvm-operator/internal/scheduler"
)

// schedulerShutdownGrace is how long requests in flight may take once the context ends.
const schedulerShutdownGrace = 10 * time.Second

type schedulerFlags struct {
	config    string
	listen    string
	verbosity int
}

func newSchedulerCommand() *cobra.Command {
	var f schedulerFlags
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Serve the capacity-scoring kube-scheduler extender (TopoLVM's topolvm-scheduler)",
		Long: "The extender filters (verb predicate) the nodes without the free space a pod's\n" +
			"capacity.topolvm.io/<device-class> annotations ask for, and scores (verb prioritize) the others\n" +
			"by their free space. It reads topolvm-scheduler's configuration file and stops gracefully on\n" +
			"SIGTERM or SIGINT. See docs/scheduler-extender.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runScheduler(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "",
		"topolvm-scheduler configuration file (YAML: listen, default-divisor, divisors)")
	fl.StringVar(&f.listen, "listen", scheduler.DefaultListen,
		"HTTP address to serve on; when set, it overrides the configuration file's listen")
	fl.IntVarP(&f.verbosity, "v", "v", 0, "log verbosity")
	return cmd
}

func runScheduler(cmd *cobra.Command, f schedulerFlags) error {
	log := logr.FromSlogHandler(
		slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.Level(-f.verbosity)}),
	)
	cfg, err := schedulerConfig(log, f.config, f.listen, cmd.Flags().Changed("listen"))
	if err != nil {
		return err
	}
	h, err := scheduler.NewHandler(cfg, log)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(cmd.Context(), "tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	log.Info("Serving the scheduler extender", "address", ln.Addr().String(),
		"defaultDivisor", cfg.DefaultDivisor, "divisors", cfg.Divisors)
	if err := serveScheduler(cmd.Context(), ln, h); err != nil {
		return err
	}
	log.Info("Scheduler extender stopped")
	return nil
}

// schedulerConfig reads the configuration file (none: the defaults); listen replaces its address
// when the flag was given.
func schedulerConfig(log logr.Logger, path, listen string, listenSet bool) (scheduler.Config, error) {
	cfg := scheduler.DefaultConfig()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return scheduler.Config{}, fmt.Errorf("read scheduler config: %w", err)
		}
		var unknown []string
		if cfg, unknown, err = scheduler.ParseConfig(data); err != nil {
			return scheduler.Config{}, fmt.Errorf("%s: %w", path, err)
		}
		if len(unknown) > 0 {
			log.Info("Ignoring unknown keys of the scheduler config", "file", path, "keys", strings.Join(unknown, ","))
		}
		if cfg.ProfilingBindAddress != "" {
			log.Info("Ignoring profiling-bind-address: the extender serves no profiling endpoint", "file", path)
		}
	}
	if listenSet || cfg.Listen == "" {
		cfg.Listen = listen
	}
	return cfg, nil
}

// serveScheduler serves h on ln until ctx ends, then lets requests in flight finish for up to
// schedulerShutdownGrace.
func serveScheduler(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve the scheduler extender: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), schedulerShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shut down the scheduler extender: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve the scheduler extender: %w", err)
	}
	return nil
}
