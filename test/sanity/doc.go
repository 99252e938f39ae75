// Package sanity runs the csi-sanity binary (kubernetes-csi/csi-test, built from the Go module proxy)
// against the real driver stack on real lvm2: inside one User-mode Linux guest it starts an envtest
// control plane, builds a thick and a thin volume group on the guest disks, runs the node agent
// (lvmd, LogicalVolume reconciler, CSI Identity and Node services, capacity annotations) and the CSI
// Controller service on one manager, and runs csi-sanity once per device class and access type.
//
// The tests are guest tests (build tag guest); hack/sanity.sh (make sanity) builds and boots them.
// See docs/testing-sanity.md.
package sanity
