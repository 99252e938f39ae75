package kubectlplugin

// Names of the CSI driver that the plugin reads in Kubernetes objects. They equal those of
// internal/csi (a test checks it); the plugin does not import that package, which would build the
// CSI gRPC stack into it.
const (
	// driverName is the CSI driver of lvms PersistentVolumes and the provisioner of its StorageClasses.
	driverName = "topolvm.io"
	// paramDeviceClass is the StorageClass parameter naming the device class; empty means the default.
	paramDeviceClass = "topolvm.io/device-class"
	// capacityAnnotationPrefix prefixes the Node annotation holding a device class's free bytes.
	capacityAnnotationPrefix = "capacity.topolvm.io/"
	// topologyNodeKey is the key of a PersistentVolume's node affinity that names its node.
	topologyNodeKey = "topology.topolvm.io/node"
)
