//go:build e2e

package e2e

// btrfsClass is a StorageClass of the thin device class with btrfs: testVolumeModes writes and reads
// a btrfs volume and testExpansion grows one online (df in the running pod follows). Its stats are
// proven in the UML guest (internal/csi/node TestGuestNodeFilesystemLifecycle): the kubelets of the
// dev cluster's nodes serve no volume stats (their /stats/summary fails on cAdvisor's root
// filesystem, "cannot find filesystem info for device /var/lib/kubelet", and their metrics carry no
// kubelet_volume_stats_*).
const btrfsClass = "e2e-thin-btrfs"
