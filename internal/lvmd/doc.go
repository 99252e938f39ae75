// Package lvmd is the node-local LVM volume service: it creates, grows,
// snapshots and removes the logical volumes of Kubernetes volumes in the
// volume groups of configured device classes, and reports the capacity of
// each class.
//
// The service keeps the LVM state (VGs, thin pools, LVs) in memory, read
// with one `lvm fullreport` (see lvm.Client.State), so that the hot path of
// a create costs exactly one lvm execution: the request is validated against
// the cached state, one lvcreate runs, and the cache is updated from what
// was created (sizes rounded up to the VG's extent size as lvm2 does). The
// full state is read again after failures, on a slow timer, when the device
// classes change and on request (Service.Refresh).
//
// Device classes come from a Config (TopoLVM-compatible YAML) held by a
// DeviceClassManager, which can be replaced at run time. Capacity changes
// are streamed to subscribers by Service.Watch. Server exposes the service
// over gRPC (package lvmdpb in ./proto) on a unix socket; Client is the
// node agent's side.
package lvmd
