// Package devcluster runs a local Kubernetes cluster for developing and testing the operator:
// `lvms-dev up|down|status`.
//
// Everything on the host listens on 127.0.0.1 only. The control plane runs as host processes:
// etcd, kube-apiserver (certificates generated here, admin client certificate, RBAC and the Node
// authorizer), kube-controller-manager, kube-scheduler and the snapshot-controller (a cluster
// add-on). Each node is a User-mode Linux guest (package dev/internal/uml) with sparse disks;
// its init runs hack/uml/real-node.sh, which starts guestbridge (the guest reaches the apiserver
// at its own 127.0.0.1:6443 over a serial line, package bridge), containerd with crun, imports
// the OCI archives of _output/images and starts the real kubelet. The apiserver reaches the
// kubelets and pods through an egress proxy over the same bridges. The nodes reach each other's
// pods over an Ethernet network of their own, a switch in the supervisor (package umlswitch)
// that no host address is part of. The product is installed
// from config/default, its image pinned by digest, as a user installs it.
//
// `up` builds the binaries, then starts `lvms-dev supervise` detached: the supervisor owns every
// process and guest, starts them in order, reports progress to <state>/logs/supervisor.log,
// marks the cluster ready (or failed) and tears everything down on SIGTERM. `down` signals it
// and kills whatever the pid files still name. All state lives under one directory; see
// [Layout].
package devcluster
