package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lvm-operator/lvm-operator/internal/evacuator"
	"github.com/lvm-operator/lvm-operator/internal/mobility"
)

type evacuatorFlags struct {
	labels, annotations []string
	probeAddr           string
	leaderElect         bool
	opts                evacuator.Options
	log                 *zap.Options
}

func newEvacuatorCommand() *cobra.Command {
	f := &evacuatorFlags{}
	cmd := &cobra.Command{
		Use:   "evacuator",
		Short: "Evacuate the nodes that carry a label or annotation: move every claim on them elsewhere",
		Long: "The evacuator (an optional component) watches the nodes. A node that carries one of the\n" +
			"--label or --annotation triggers is cordoned, and every bound claim whose volume is on it is\n" +
			"moved to another node as kubectl lvms move does, one claim at a time: its pods are evicted\n" +
			"(PodDisruptionBudgets hold), the volume is copied, the claim rebound; the next claim waits until\n" +
			"the moved claim's workload is Ready again. The node's annotation lvms.topolvm.io/evacuation and\n" +
			"its Events tell the progress. See docs/mobility.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEvacuator(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.labels, "label", []string{evacuator.DefaultLabel},
		"a node label KEY or KEY=VALUE that asks for the node's evacuation (repeatable)")
	fl.StringArrayVar(&f.annotations, "annotation", nil,
		"a node annotation KEY or KEY=VALUE that asks for the node's evacuation (repeatable)")
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "health and readiness probe address")
	fl.BoolVar(&f.leaderElect, "leader-elect", true, "elect a leader among replicas (one evacuates)")
	fl.DurationVar(
		&f.opts.MoveTimeout,
		"move-timeout",
		mobility.DefaultMoveTimeout,
		"how long each claim's move may take",
	)
	fl.DurationVar(&f.opts.Resync, "resync", evacuator.DefaultResync, "how often every node is looked at")
	fl.DurationVar(&f.opts.ReadyTimeout, "ready-timeout", evacuator.DefaultReadyTimeout,
		"how long a moved claim's workload may take to be Ready before the next claim moves")
	f.log = addLogFlags(fl)
	return cmd
}

// triggers are the flags' label and annotation triggers.
func (f *evacuatorFlags) triggers() ([]evacuator.Trigger, error) {
	var out []evacuator.Trigger
	for i, list := range [][]string{f.labels, f.annotations} {
		for _, s := range list {
			t, err := evacuator.ParseTrigger(s, i == 1)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no trigger: give --label or --annotation")
	}
	return out, nil
}

func runEvacuator(cmd *cobra.Command, f *evacuatorFlags) error {
	setLogger(f.log, "evacuator")
	var err error
	if f.opts.Triggers, err = f.triggers(); err != nil {
		return err
	}
	scheme, err := operatorScheme()
	if err != nil {
		return err
	}
	renew, lease := 30*time.Second, 45*time.Second
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        f.probeAddr,
		LeaderElection:                f.leaderElect,
		LeaderElectionID:              "lvms-evacuator.lvm.topolvm.io",
		LeaseDuration:                 &lease,
		RenewDeadline:                 &renew,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("readiness check: %w", err)
	}
	if _, err := evacuator.Setup(cmd.Context(), mgr, f.opts); err != nil {
		return err
	}
	return mgr.Start(cmd.Context())
}
