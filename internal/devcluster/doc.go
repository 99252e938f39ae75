// Package devcluster runs a local Kubernetes cluster for developing and testing the operator:
// `lvms-dev up|down|status`.
//
// Everything listens on 127.0.0.1 only. The control plane runs as host processes: etcd,
// kube-apiserver (certificates generated here, admin client certificate, RBAC), kube-controller-
// manager, kube-scheduler, snapshot-controller, `lvms operator` (webhook reached by URL, CSI
// controller on a unix socket) and the csi-provisioner, csi-resizer and csi-snapshotter sidecars.
// Each node is a User-mode Linux guest (package internal/testing/uml) with sparse disks; its init
// runs hack/uml/dev-node.sh, which starts guestbridge (the guest reaches the apiserver at its own
// 127.0.0.1:6443 over a serial line, package bridge), `lvms node` and `lvms-dev dev-kubelet`.
//
// `up` builds the binaries, then starts `lvms-dev supervise` detached: the supervisor owns every
// process and guest, starts them in order, reports progress to <state>/logs/supervisor.log,
// marks the cluster ready (or failed) and tears everything down on SIGTERM. `down` signals it
// and kills whatever the pid files still name. All state lives under one directory; see
// [Layout].
package devcluster
