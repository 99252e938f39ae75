package placement

// Names of the CSI driver that placement reads in Kubernetes objects. They equal those of
// internal/csi (a test checks it); placement does not import that package, which would build the CSI
// gRPC stack into the kubectl plugin.
const (
	// DriverName is the CSI driver of lvms PersistentVolumes and the provisioner of its StorageClasses.
	DriverName = "topolvm.io"
	// ParamDeviceClass is the StorageClass parameter naming the device class; empty means the default.
	ParamDeviceClass = "topolvm.io/device-class"
	// CapacityAnnotationPrefix prefixes the Node annotation holding a device class's free bytes.
	CapacityAnnotationPrefix = "capacity.topolvm.io/"
	// TopologyNodeKey is the key of a PersistentVolume's node affinity that names its node.
	TopologyNodeKey = "topology.topolvm.io/node"
)

// EventInvolvedObjectName is the field selector of core/v1 Events on the name of their object. Tests
// with a fake client index Events under it.
const EventInvolvedObjectName = "involvedObject.name"
