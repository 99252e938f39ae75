// Package sanity runs the csi-sanity binary (kubernetes-csi/csi-test, built from the Go module proxy)
// against the real driver stack on real lvm2, in two halves:
//
//   - the host half (TestSanityHost, build tag sanity) starts an envtest control plane on the host
//     and boots one User-mode Linux guest, handing it a serial-line bridge to the apiserver;
//   - the guest half (TestSanity, build tag guest) opens its side of the bridge, builds a thick and
//     a thin volume group on the guest disks, runs the node agent (lvmd, LogicalVolume reconciler,
//     CSI Identity and Node services, capacity annotations) and the CSI Controller service on one
//     manager, and runs csi-sanity once per device class and access type.
//
// hack/sanity.sh (make sanity) builds both and runs the host half. See docs/testing-sanity.md.
package sanity
