package placement

// Report is what placement knows about one PersistentVolumeClaim; kubectl lvms why -o json prints it.
type Report struct {
	Namespace string `json:"namespace"`
	Claim     string `json:"claim"`
	Phase     string `json:"phase"`
	// Bound is the claim's volume when the claim is Bound; only RequestedBytes and Verdict are set
	// besides it then.
	Bound *BoundVolume `json:"bound,omitempty"`

	StorageClass      string `json:"storageClass,omitempty"`
	Provisioner       string `json:"provisioner,omitempty"`
	VolumeBindingMode string `json:"volumeBindingMode,omitempty"`
	// StorageClassProblem says why the claim's StorageClass cannot give it a volume of this driver.
	StorageClassProblem string `json:"storageClassProblem,omitempty"`
	// DeviceClass is the StorageClass's device class; DefaultDeviceClass tells that the StorageClass
	// names none and it is the LVMCluster's default.
	DeviceClass        string `json:"deviceClass,omitempty"`
	DefaultDeviceClass bool   `json:"defaultDeviceClass,omitempty"`
	RequestedBytes     int64  `json:"requestedBytes"`
	// SelectedNode is the node the scheduler chose for the claim (annotation
	// volume.kubernetes.io/selected-node), if any.
	SelectedNode string `json:"selectedNode,omitempty"`
	// Nodes has one entry per Node of the cluster, sorted by name, when the device class is known.
	Nodes []NodeFit `json:"nodes,omitempty"`
	// Events are the messages of the claim's Warning events, oldest first (Why only).
	Events  []string `json:"events,omitempty"`
	Verdict string   `json:"verdict"`
}

// BoundVolume is where a Bound claim's data is.
type BoundVolume struct {
	PersistentVolume string `json:"persistentVolume"`
	Driver           string `json:"driver,omitempty"`
	Node             string `json:"node,omitempty"`
	DeviceClass      string `json:"deviceClass,omitempty"`
	SizeBytes        int64  `json:"sizeBytes"`
	VolumeID         string `json:"volumeID,omitempty"`
}

// Fit is how a node's device class compares with a claim's request.
type Fit string

// Fits of NodeFit.
const (
	// FitFits: the node's capacity annotation is at least the request.
	FitFits Fit = "Fits"
	// FitTooSmall: the node's capacity annotation is below the request.
	FitTooSmall Fit = "DoesNotFit"
	// FitNotOnNode: the node has neither the device class's volume group nor its capacity annotation.
	FitNotOnNode Fit = "NotOnNode"
	// FitNotReady: the node reports the device class Progressing, Degraded or Failed.
	FitNotReady Fit = "NotReady"
	// FitUnknown: the volume group is Ready but its capacity annotation is missing or unreadable.
	FitUnknown Fit = "Unknown"
)

// NodeFit is one node's device class against the claim's request.
type NodeFit struct {
	Node string `json:"node"`
	Fit  Fit    `json:"fit"`
	// FreeBytes is the node's annotation capacity.topolvm.io/<device class>: the bytes a new volume
	// can get (for a thin device class, what the overprovisioned pool can still promise).
	FreeBytes *int64 `json:"freeBytes,omitempty"`
	// State and Reason are the node's report of the volume group, when it has one.
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`
}
