// Package logicalvolume is the node agent's LogicalVolume controller: for every LogicalVolume whose
// spec.nodeName is this node it creates the LV through lvmd (a new LV in the device class, or a thin
// snapshot or clone of spec.source), grows it when spec.size grows, removes it when the object is
// deleted, and reports what it observes in the status.
//
// The LV is named after the object's UID (or after status.volumeID for volumes created by an earlier
// TopoLVM agent), so a restarted agent finds the LV it made before it could record it, and never
// creates a second one. status.volumeID is that name. The finalizer topolvm.io/logicalvolume (the
// name TopoLVM uses) keeps the object until the LV is removed.
//
// The status is derived from observation on every reconcile and written at most once, with
// server-side apply: conditions Created and Resized, status.currentSize from lvmd (lvm2 rounds sizes
// up to whole extents), and, for TopoLVM compatibility, status.code and status.message carrying the
// gRPC code and text of the last failure (ResourceExhausted when the device class lacks space).
package logicalvolume
