// Package nodeagent holds the pieces of the node agent (`lvms node`) around lvmd and the CSI node
// service, each a controller-runtime Runnable or a small adapter:
//
//   - Volumes locates a CSI volume's device for the CSI node service (volume ID → /dev/<vg>/<lv>).
//   - CapacityAnnotator keeps the Node's capacity.topolvm.io/<device-class> annotations (and
//     capacity.topolvm.io/00default for the default class) equal to lvmd's free bytes, from lvmd's
//     capacity Watch stream.
//   - Metrics exports lvmd's capacities as the TopoLVM Prometheus gauges (topolvm_volumegroup_*,
//     topolvm_thinpool_*; labels node and device_class).
//   - Registration serves kubelet's plugin registration API on a socket in the kubelet's
//     plugins_registry directory, so no node-driver-registrar sidecar is needed.
//   - ProbeCheck is a health check (for the manager's /healthz) that calls the CSI Identity Probe in
//     process, so no livenessprobe sidecar is needed.
package nodeagent
