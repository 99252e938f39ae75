package main

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/pprof"
	"time"

	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/lvm-operator/lvm-operator/internal/metricsauth"
	"github.com/lvm-operator/lvm-operator/internal/tlsprofile"
)

// The metrics server asks the API server who sent each scrape (a TokenReview of its bearer token)
// and whether that user may get the non-resource URL /metrics (a SubjectAccessReview), for example
// through ClusterRole lvms-metrics-reader (config/rbac/metrics_reader_role.yaml). The node agent's
// role carries the same rules from internal/nodeagent.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// The file names in --metrics-cert-dir: those of a kubernetes.io/tls Secret mounted as a volume.
const (
	metricsCertFile = "tls.crt"
	metricsKeyFile  = "tls.key"
)

// profilingFlag serves Go's runtime profiles (net/http/pprof) under profilePath on the metrics
// endpoint, behind the same authentication and authorization as /metrics: a client needs get on
// the non-resource URL, which ClusterRole lvms-profile-reader grants (config/rbac). The operator
// passes its own setting on to the node agents. Off by default; profilingEnv sets the default.
const (
	profilingFlag = "profiling"
	profilingEnv  = "LVMS_PROFILING"
	profilePath   = "/debug/pprof/"

	profilingUsage = "serve Go's runtime profiles (pprof) at " + profilePath + " on the metrics endpoint, for " +
		"clients allowed to get that non-resource URL (ClusterRole lvms-profile-reader); default: true if $" +
		profilingEnv + " is \"true\""
)

// metricsOptions configures the metrics server of the operator and of the node agent alike: HTTPS
// on bindAddress ("0" disables it) with the TLS policy, and /metrics only for authenticated clients
// allowed to get it.
// It serves tls.crt and tls.key from certDir (reloaded when they change), which must exist; with
// certDir empty, those of controller-runtime's default directory when both exist there (as LVMS
// mounts them), or else a self-signed certificate made in memory (selfSignedCert). With profiling
// the server also serves the pprof handlers under profilePath, filtered alike.
func metricsOptions(bindAddress, certDir string, profiling bool, policy tlsprofile.Profile) (metricsserver.Options,
	error) {
	opts := metricsserver.Options{
		BindAddress:    bindAddress,
		SecureServing:  true,
		FilterProvider: metricsauth.FilterProvider,
		TLSOpts:        []func(*tls.Config){disableHTTP2, policy.Apply},
	}
	if profiling {
		opts.ExtraHandlers = profileHandlers()
	}
	if certDir == "" {
		if certFilesErr(defaultMetricsCertDir()) != nil {
			self := &selfSignedCert{now: time.Now}
			opts.TLSOpts = append(opts.TLSOpts, func(c *tls.Config) { c.GetCertificate = self.getCertificate })
		}
		return opts, nil
	}
	// controller-runtime falls back to a self-signed certificate when the files are missing; a
	// certificate the user mounted must not be replaced silently.
	if err := certFilesErr(certDir); err != nil {
		return metricsserver.Options{}, fmt.Errorf("--metrics-cert-dir: %w", err)
	}
	opts.CertDir, opts.CertName, opts.KeyName = certDir, metricsCertFile, metricsKeyFile
	return opts, nil
}

// profileHandlers are net/http/pprof's handlers as its init registers them on the default mux
// (which the product never serves): the index answers every named profile (heap, goroutine,
// allocs, block, mutex, threadcreate) below profilePath.
func profileHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		profilePath:             http.HandlerFunc(pprof.Index),
		profilePath + "cmdline": http.HandlerFunc(pprof.Cmdline),
		profilePath + "profile": http.HandlerFunc(pprof.Profile),
		profilePath + "symbol":  http.HandlerFunc(pprof.Symbol),
		profilePath + "trace":   http.HandlerFunc(pprof.Trace),
	}
}

// disableHTTP2 offers HTTP/1.1 only, as LVMS and kubebuilder's scaffold do for their metrics
// endpoints: the HTTP/2 stream-reset and rapid-reset attacks need no credentials, and a scrape
// gains nothing from HTTP/2.
func disableHTTP2(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }
