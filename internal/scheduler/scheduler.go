// Package scheduler is the capacity-scoring kube-scheduler extender that `lvms scheduler` serves,
// compatible with TopoLVM's topolvm-scheduler: the same HTTP verbs, annotations, scores and
// configuration file, so a KubeSchedulerConfiguration written for TopoLVM works unchanged.
//
// The pod mutating webhook (internal/webhook, path /pod/mutate) writes on a pod the bytes it asks
// for per device class, as annotations capacity.topolvm.io/<class>, and the extended resource
// topolvm.io/capacity that makes the scheduler call the extender for that pod alone. The node agent
// writes the same annotations on each Node with the free bytes of each device class. The extender
// compares the two:
//
//   - POST /predicate (filter verb "predicate") keeps the nodes with at least the requested bytes
//     free in every requested class and reports the others with a reason;
//   - POST /prioritize (prioritize verb "prioritize") scores a node by the free GiB of the
//     requested classes, min(10, max(1, log2(GiB / divisor))), the lowest class score counting;
//     for a pod whose claims restore a snapshot or clone a claim (the webhook names the nodes
//     holding those sources in lvms.topolvm.io/source-nodes, our addition), those nodes score 10
//     and the others half their score, rounded up;
//   - GET /status answers "ok" (probes).
//
// Requests and responses are k8s.io/kube-scheduler/extender/v1 types; the extender needs the full
// Node objects (nodeCacheCapable: false) and no access to the API server. docs/scheduler-extender.md
// describes the deployment.
package scheduler

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// MaxRequestBytes bounds a request body. The scheduler sends every candidate Node in full, with
// its status (images included), so the bound is generous: about 6000 nodes of 10 KiB.
const MaxRequestBytes = 64 << 20

// Handler serves the extender's HTTP verbs.
type Handler struct {
	defaultDivisor float64
	divisors       map[string]float64
	log            logr.Logger
	mux            *http.ServeMux
}

// NewHandler returns the extender for cfg's divisors (cfg.Listen is the caller's). log gets a line
// per call naming the pod (namespace/name) and the number of nodes, at verbosity 1 the reasons
// and scores per node, and the failures to write a response.
func NewHandler(cfg Config, log logr.Logger) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &Handler{defaultDivisor: cfg.DefaultDivisor, divisors: cfg.Divisors, log: log, mux: http.NewServeMux()}
	h.mux.HandleFunc("POST /predicate", h.predicate)
	h.mux.HandleFunc("POST /prioritize", h.prioritize)
	h.mux.HandleFunc("GET /status", h.status)
	return h, nil
}

// ServeHTTP routes to the verbs; other paths are 404, other methods 405.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) predicate(w http.ResponseWriter, r *http.Request) {
	args, ok := decodeArgs(w, r)
	if !ok {
		return
	}
	requests := podRequests(args.Pod)
	res := filterNodes(args.Nodes.Items, requests)
	h.log.Info("Filtered nodes", "pod", podRef(args.Pod), "requests", requests,
		"passed", len(res.Nodes.Items), "failed", len(res.FailedAndUnresolvableNodes))
	h.log.V(1).Info("Nodes that failed", "pod", podRef(args.Pod), "reasons", res.FailedAndUnresolvableNodes)
	h.reply(w, res)
}

func (h *Handler) prioritize(w http.ResponseWriter, r *http.Request) {
	args, ok := decodeArgs(w, r)
	if !ok {
		return
	}
	sources := driver.SourceNodes(args.Pod.Annotations)
	scores := h.scoreNodes(args.Nodes.Items, requestedClasses(args.Pod), sources)
	h.log.Info("Scored nodes", "pod", podRef(args.Pod), "nodes", len(args.Nodes.Items), "sourceNodes", sources)
	h.log.V(1).Info("Node scores", "pod", podRef(args.Pod), "scores", scores)
	h.reply(w, scores)
}

// podRef names a pod in logs as namespace/name.
func podRef(pod *corev1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}

func (h *Handler) status(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if _, err := w.Write([]byte("ok")); err != nil {
		h.log.V(1).Info("Writing the status response failed", "err", err)
	}
}

// decodeArgs reads the ExtenderArgs of a request, or answers 400 (413 for an oversized body) and
// returns false.
func decodeArgs(w http.ResponseWriter, r *http.Request) (extenderv1.ExtenderArgs, bool) {
	var args extenderv1.ExtenderArgs
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRequestBytes)).Decode(&args)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
	case err != nil:
		http.Error(w, fmt.Sprintf("decode ExtenderArgs: %v", err), http.StatusBadRequest)
	case args.Pod == nil:
		http.Error(w, "ExtenderArgs has no Pod", http.StatusBadRequest)
	case args.Nodes == nil:
		http.Error(w, "ExtenderArgs has no Nodes: configure the extender with nodeCacheCapable: false",
			http.StatusBadRequest)
	default:
		return args, true
	}
	return args, false
}

func (h *Handler) reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		h.log.Error(err, "Writing the extender response failed")
	}
}
