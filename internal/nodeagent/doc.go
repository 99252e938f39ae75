// Package nodeagent is the node agent (`lvms node`): Run assembles it from its parts on one
// controller-runtime manager, and the rest of the package holds the parts that exist only for it.
//
//	LVMVolumeGroup ──> vgmanager ──(device classes)──> lvmd <── LogicalVolume reconciler <── LogicalVolume
//	                                                   │  ▲
//	                         capacity Watch ───────────┘  └─── Volumes <── CSI Node service <── kubelet
//	                          │          │
//	   Node annotations <── CapacityAnnotator   Metrics ──> /metrics
//
//	kubelet plugin watcher ──> Registration          /healthz ──> ProbeCheck ──> CSI Identity Probe
//
// Run's parts, each a controller-runtime Runnable or a small adapter:
//
//   - lvmd in process, its device classes fed live by the volume-group manager (or fixed by a
//     static configuration, as with a standalone lvmd); optionally also served on a socket.
//   - The volume-group manager and the LogicalVolume reconciler (their own packages).
//   - The CSI Identity and Node services on a unix socket; Volumes locates a CSI volume's device for
//     the Node service (volume ID → /dev/<vg>/<lv>).
//   - CapacityAnnotator keeps the Node's capacity.topolvm.io/<device-class> annotations (and
//     capacity.topolvm.io/00default for the default class) equal to lvmd's free bytes, from lvmd's
//     capacity Watch stream.
//   - Metrics exports lvmd's capacities as the TopoLVM Prometheus gauges (topolvm_volumegroup_*,
//     topolvm_thinpool_*; labels node and device_class).
//   - Registration serves kubelet's plugin registration API on a socket in the kubelet's
//     plugins_registry directory, so no node-driver-registrar sidecar is needed.
//   - ProbeCheck is a health check (for the manager's /healthz) that calls the CSI Identity Probe in
//     process, so no livenessprobe sidecar is needed.
//
// The same assembly serves production (commands through nsenter into the host) and tests that run
// it inside a User-mode Linux guest (no prefix), so both exercise one code path.
package nodeagent
