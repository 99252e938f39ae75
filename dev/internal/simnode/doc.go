// Package simnode runs simulated nodes for the control-plane scale benchmark (dev/bench/scale):
// thousands of node agents in one process, each doing towards the API server what a real node
// agent does, on an in-memory lvm2.
//
// A simulated node is the product's own node-agent parts on lvmtest's in-memory lvm2: the
// volume-group manager (internal/controller/vgmanager) over simulated disks evaluated by the real
// device filter, lvmd (internal/lvmd) with its periodic state reads, the LogicalVolume reconciler
// (internal/controller/logicalvolume) and the capacity annotator (internal/nodeagent). What the
// kubelet would do for the node agent is done here too: the Node object (for kwok to keep Ready),
// its topology label and the CSINode with the driver registered.
//
// What differs from N real agents, and is said wherever figures are printed: the nodes share one
// API client (its rate limits raised) and one cache, so the API server serves one watch per
// resource instead of one per node; Fleet.Events counts the watch events the real agents would each
// receive, so the fan-out they would cost is known. Reconciles of all nodes run on a shared pool of
// workers, with at most one volume-group reconcile per node at a time, as in the real agent.
//
// This is development tooling; nothing here is linked into the product binary.
package simnode
