package main

import (
	"flag"

	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lvm-operator/lvm-operator/internal/version"
)

// logLevelFlag is controller-runtime's verbosity flag, which the operator passes on to the node
// agents.
const logLevelFlag = "zap-log-level"

// addLogFlags adds controller-runtime's zap flags (--zap-log-level, --zap-devel, --zap-encoder,
// --zap-stacktrace-level, --zap-time-encoding), the logging flags of LVMS's and TopoLVM's
// controller-runtime binaries, to fl. The default is JSON at level info with RFC 3339 timestamps to
// the nanosecond (controller-runtime's own default stops at the second, too coarse to order the
// commands of a busy node); --zap-log-level=debug adds the V(1) lines, e.g. every host command with
// its duration.
func addLogFlags(fl *pflag.FlagSet) *zap.Options {
	o := &zap.Options{TimeEncoder: zapcore.RFC3339NanoTimeEncoder}
	goflags := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.BindFlags(goflags)
	fl.AddGoFlagSet(goflags)
	return o
}

// setLogger makes the zap logger of o controller-runtime's (and so every component's) logger and
// logs that component starts, with the version: the first line of the process, from which its
// startup (to the health server, to Ready) can be timed.
func setLogger(o *zap.Options, component string) {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(o)))
	ctrl.Log.WithName(component).Info("Starting", "version", version.Get().String())
}

// logLevel is the value --zap-log-level was given on fl ("" when it was not set).
func logLevel(fl *pflag.FlagSet) string {
	f := fl.Lookup(logLevelFlag)
	if f == nil || !f.Changed {
		return ""
	}
	return f.Value.String()
}
