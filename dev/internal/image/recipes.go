package image

// References of the images built for the local cluster.
const (
	DefaultLvmsRef = "ghcr.io/lvm-operator/lvms:latest"
	PauseRef       = "lvms.local/pause:dev"
	WorkloadRef    = "lvms.local/workload:dev"
)

// Sidecar is a kubernetes-csi sidecar image built from a binary of hack/csi-tools.sh.
type Sidecar struct {
	// Name is the binary's name in the CSI tools directory and in the image (/<name>).
	Name string
	// Ref is the reference config/manager/manager.yaml (or a component of config/components) uses.
	Ref    string
	Source string
}

// snapshotMetadataSource is the repository of the changed-block-tracking sidecar and its clients.
const snapshotMetadataSource = "https://github.com/kubernetes-csi/external-snapshot-metadata"

// Sidecars are the sidecar images of the local cluster, at the versions hack/csi-tools.sh pins.
var Sidecars = []Sidecar{
	{
		"csi-provisioner",
		"registry.k8s.io/sig-storage/csi-provisioner:v6.3.0",
		"https://github.com/kubernetes-csi/external-provisioner",
	},
	{
		"csi-resizer",
		"registry.k8s.io/sig-storage/csi-resizer:v2.3.0",
		"https://github.com/kubernetes-csi/external-resizer",
	},
	{
		"csi-snapshotter",
		"registry.k8s.io/sig-storage/csi-snapshotter:v8.7.0",
		"https://github.com/kubernetes-csi/external-snapshotter",
	},
	{
		"snapshot-controller",
		"registry.k8s.io/sig-storage/snapshot-controller:v8.7.0",
		"https://github.com/kubernetes-csi/external-snapshotter",
	},
	// config/components/snapshot-metadata.
	{"csi-snapshot-metadata", "registry.k8s.io/sig-storage/csi-snapshot-metadata:v0.2.0", snapshotMetadataSource},
	// Not a sidecar: external-snapshot-metadata's example client, for the dev cluster's pods (it
	// resolves the Service DNS name of the SnapshotMetadataService, so it runs in the cluster). Its
	// entrypoint is /snapshot-metadata-lister.
	{"snapshot-metadata-lister", SnapshotMetadataListerRef, snapshotMetadataSource},
}

// SnapshotMetadataListerRef is the image of snapshot-metadata-lister (external-snapshot-metadata
// v0.2.0) for the dev cluster.
const SnapshotMetadataListerRef = "lvms.local/snapshot-metadata-lister:v0.2.0"

// lvmsPackages are the Debian packages of the host tools lvms runs (lvm, mkfs.*, resize2fs,
// xfs_growfs, btrfs, blkid, wipefs, lsblk, nsenter, mount, umount, fsck, cryptsetup); their run-time
// dependencies are added by Apt.Resolve.
var lvmsPackages = []string{
	"lvm2", "thin-provisioning-tools", "e2fsprogs", "xfsprogs", "btrfs-progs", "util-linux", "mount",
	"cryptsetup-bin",
}

// lvmsExcluded are dependencies left out of the images, with the reason. CheckSharedLibs
// proves that no remaining binary needs a library of them.
var lvmsExcluded = map[string]string{
	"python3":        "only xfs_scrub_all (a cron helper, removed) is written in Python",
	"libicu72":       "only xfs_scrub (removed) links it; 36 MB",
	"debconf":        "maintainer scripts only, which never run",
	"cdebconf":       "maintainer scripts only, which never run",
	"dpkg":           "maintainer scripts only; packages are unpacked with dpkg-deb on the build host",
	"perl-base":      "maintainer scripts only",
	"perl":           "maintainer scripts only",
	"install-info":   "info pages are not installed",
	"lsb-base":       "init scripts only (an empty transitional package in Debian 12)",
	"sysvinit-utils": "init scripts only",
	"libelogind0":    "an alternative to libsystemd0, which is installed",
}

// lvmsRemoved are files of the installed packages left out because they need an excluded
// package and lvms never runs them.
var lvmsRemoved = []string{
	"usr/sbin/xfs_scrub", "usr/sbin/xfs_scrub_all", "usr/lib/x86_64-linux-gnu/xfsprogs",
	"usr/lib/x86_64-linux-gnu/gconv", "etc/cron.d",
}

// busyboxApplets are linked to /bin/busybox in the workload image.
var busyboxApplets = []string{
	"[", "awk", "basename", "cat", "chmod", "chown", "cp", "cut", "date", "dd", "df", "dirname",
	"du", "echo", "env", "false", "find", "grep", "head", "hostname", "id", "kill", "ln", "ls",
	"md5sum", "mkdir", "mktemp", "mount", "mv", "od", "printf", "ps", "pwd", "rm", "rmdir", "sed",
	"seq", "sh", "sha256sum", "sleep", "sort", "stat", "sync", "tail", "tee", "test", "touch",
	"tr", "true", "truncate", "umount", "uname", "uniq", "wc", "xargs",
}
