// Package kubectlplugin is the kubectl plugin kubectl-lvms: commands that explain the LVM storage of
// a cluster from the objects the operator, the node agents and the CSI driver write.
//
//   - status: the LVMCluster and every volume group of every node, with capacity and thin pool fill;
//   - disks: every disk of every node, and which device class uses it or why none does;
//   - volumes: every topolvm.io PersistentVolume joined with its LogicalVolume, and LogicalVolumes
//     that no PersistentVolume uses;
//   - why: why a PersistentVolumeClaim is Pending, node by node (computed by internal/placement,
//     which the operator's claim events share);
//   - plan: what every node would do with an LVMCluster file before it is applied.
//
// All of them only read, except plan, the one command that writes: it creates the file's LVMCluster
// with the dry-run annotation (lvm.topolvm.io/dry-run), so that the node agents plan without
// touching any disk, and reads their plans from the LVMCluster's status. No command touches a disk.
//
// Each read-only command is a Runner: it reads through a controller-runtime client.Reader and writes a
// table, JSON or YAML to an io.Writer, so tests run it against a fake client; RunPlan takes a
// client.Client. NewRootCommand wires them into cobra with kubectl's connection flags. The product
// binary cmd/lvms never imports this package; cmd/kubectl-lvms does. docs/kubectl-lvms.md is the
// user guide.
package kubectlplugin
