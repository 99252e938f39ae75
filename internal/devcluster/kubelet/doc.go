// Package kubelet is a small kubelet stand-in for the local dev cluster (`lvms-dev`). It is test
// infrastructure, not a kubelet: it runs inside a dev-cluster node (a UML guest with real lvm2 and the
// node agent beside it) and does just enough of a kubelet's work for the storage flows of driver
// topolvm.io to run end to end.
//
//   - It registers the Node, keeps it Ready (status heartbeats and a Lease in kube-node-lease).
//   - It writes the CSINode from the CSI node service's NodeGetInfo, as kubelet's plugin registration does.
//   - For pods bound to the node it publishes their CSI volumes (NodeStageVolume when the driver stages,
//     NodePublishVolume) and runs the first container's command as a plain process in a private mount
//     namespace where each volume is bind-mounted at its mountPath, reports the pod phase and exit code,
//     keeps the output in a log file and its tail in the pod annotation dev.lvms.io/log-tail.
//   - On pod deletion it stops the process, unpublishes the volumes and removes the pod object.
//   - It answers FileSystemResizePending with NodeExpandVolume and finishes the claim's resize status.
//
// DaemonSet pods are only marked Running: the node agent runs beside it as a process. There are no
// images, containers, cgroups, probes, logs or exec endpoints. docs/dev-kubelet.md has the details.
package kubelet
