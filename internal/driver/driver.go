// Package driver holds what every part of the product knows about the CSI driver topolvm.io: its
// names (shared with TopoLVM and OpenShift LVMS; changing any of them breaks existing volumes), the
// codec of the capacity annotations of Nodes and Pods and of the Pods' source-nodes annotation, and
// the one check of whether a node's free bytes fit a request. It imports nothing of the product and no gRPC, so the scheduler extender,
// the kubectl plugin, the webhooks, the operator and the node agent all use it.
package driver

// Names of the driver in Kubernetes objects.
const (
	// Name is the CSI driver name (CSIDriver object, StorageClass provisioner, PV driver).
	Name = "topolvm.io"
	// TopologyNodeKey is the topology segment key whose value is the node name.
	TopologyNodeKey = "topology.topolvm.io/node"
	// ParamDeviceClass is the StorageClass parameter naming the device class; empty means the default.
	ParamDeviceClass = "topolvm.io/device-class"
	// ParamLvcreateOptionClass is the StorageClass parameter naming an lvcreate option class.
	ParamLvcreateOptionClass = "topolvm.io/lvcreate-option-class"
	// ParamFSType is the StorageClass parameter for the filesystem; the external-provisioner moves it
	// into the volume capability's fs_type.
	ParamFSType = "csi.storage.k8s.io/fstype"
	// ParamEncryption is the StorageClass parameter (ours, opt-in) asking for encryption at rest.
	ParamEncryption = "topolvm.io/encryption"
	// ParamReadBPS, ParamWriteBPS, ParamReadIOPS and ParamWriteIOPS are the mutable parameters (ours)
	// of a VolumeAttributesClass that cap a volume's throughput in its pods (io.max rbps, wbps,
	// riops, wiops): a byte quantity or a count per second, or "max" for no cap.
	ParamReadBPS   = "topolvm.io/read-bps"
	ParamWriteBPS  = "topolvm.io/write-bps"
	ParamReadIOPS  = "topolvm.io/read-iops"
	ParamWriteIOPS = "topolvm.io/write-iops"
	// ParamReadAhead is the mutable parameter (ours) of a VolumeAttributesClass that sets the read-ahead
	// of the volume's LV (lvchange --readahead): "auto", "none" or a byte quantity, a multiple of 512.
	ParamReadAhead = "topolvm.io/read-ahead"
	// AnnotationClaim names the claim (namespace/name) of a LogicalVolume copied from another node:
	// the operator reports the copy on it.
	AnnotationClaim = "lvms.topolvm.io/claim"
	// AnnotationCopyImage marks a LogicalVolume cloned from a live volume on another node: its copy
	// reads a read-only snapshot of the source (the image) that the operator makes on the source's node
	// and removes once the copy is complete. Value "true".
	AnnotationCopyImage = "lvms.topolvm.io/copy-image"
	// CapacityAnnotationPrefix prefixes the annotation of a device class's bytes:
	// capacity.topolvm.io/<deviceClass>, the free bytes on a Node and the requested bytes on a Pod.
	CapacityAnnotationPrefix = "capacity.topolvm.io/"
	// DefaultDeviceClassKey is the annotation suffix of the default device class
	// (capacity.topolvm.io/00default), which requests with an empty device class consult.
	DefaultDeviceClassKey = "00default"
)
