package kubectlplugin

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/placement"
)

// The fixture cluster: three storage nodes and a control-plane node without lvms; a thin device class
// (the default) on /dev/vdb and /dev/vdc and a thick one on /dev/vdd.
//
//   - node-0: both Ready; holds the Bound thin claim default/data-db-0.
//   - node-1: thin Ready but nearly out of space (2.1Gi left); thick Failed (no /dev/vdd), /dev/vdc is
//     mounted; holds a LogicalVolume that no PV uses (a leak).
//   - node-0 and node-1 each report a loop device the kubelet attached to a Block volume; node-0 also
//     the dm-crypt mapping of an encrypted volume staged there.
//   - node-2: thin Degraded (pool 97.3% full); thick Ready with the Bound claim monitoring/prometheus-0.
//
// Pending claims: default/big-data (10Gi thin, more than any node has), default/orphan (StorageClass
// fast-ssd does not exist) and default/scratch (1Gi from a StorageClass without device class).
const testOperatorNamespace = "lvms-system"

// fixture returns the objects of the fixture cluster.
func fixture() []client.Object {
	objs := []client.Object{
		lvmCluster(),
		node("control-plane", nil),
		node("node-0", map[string]string{
			"capacity.topolvm.io/thin": "6442450944", "capacity.topolvm.io/thick": "3753902080",
			"capacity.topolvm.io/00default": "6442450944",
		}),
		node("node-1", map[string]string{
			"capacity.topolvm.io/thin": "2306867200", "capacity.topolvm.io/00default": "2306867200",
		}),
		node("node-2", map[string]string{
			"capacity.topolvm.io/thin": "4294967296", "capacity.topolvm.io/thick": "32208060416",
			"capacity.topolvm.io/00default": "4294967296",
		}),
		storageClass("lvms-thin", "thin"),
		storageClass("lvms-thick", "thick"),
		storageClass("lvms-default", ""),
		// A claim and volume of another driver, which volumes leaves out.
		pvc("default", "shared", "nfs", "1Gi", withVolume("nfs-share")),
		&corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "nfs-share"},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				PersistentVolumeSource: corev1.PersistentVolumeSource{
					NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/"},
				},
				ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "shared"},
			},
		},
		pvc("default", "data-db-0", "lvms-thin", "5Gi", withVolume("pvc-0a1b")),
		pv("pvc-0a1b", "3f2c9b1e-7d4a-4c1e-9a55-0d6c1b2e8f10", "node-0", "5Gi", "default/data-db-0"),
		lv("pvc-0a1b", "3f2c9b1e-7d4a-4c1e-9a55-0d6c1b2e8f10", "node-0", "thin", "5Gi"),
		pvc("monitoring", "prometheus-0", "lvms-thick", "20Gi", withVolume("pvc-7c8d")),
		pv("pvc-7c8d", "9b1d4e2a-0c3f-4b7e-8a61-5e2f7d9c0a34", "node-2", "20Gi", "monitoring/prometheus-0"),
		lv("pvc-7c8d", "9b1d4e2a-0c3f-4b7e-8a61-5e2f7d9c0a34", "node-2", "thick", "20Gi"),
		lv("pvc-dead", "c0ffee00-1111-4222-8333-444455556666", "node-1", "thin", "1Gi"),
		pvc("default", "big-data", "lvms-thin", "10Gi", withAnnotation("volume.kubernetes.io/selected-node", "node-0")),
		pvc("default", "orphan", "fast-ssd", "1Gi"),
		pvc("default", "scratch", "lvms-default", "1Gi"),
		// Listed newest first: why must sort them.
		event("big-data.2", "big-data", corev1.EventTypeWarning, 3,
			`failed to provision volume with StorageClass "lvms-thin": rpc error: code = ResourceExhausted `+
				`desc = device class thin on node node-0 has 6442450944 bytes free, 10737418240 requested`),
		event("big-data.1", "big-data", corev1.EventTypeWarning, 2,
			`failed to provision volume with StorageClass "lvms-thin": rpc error: code = ResourceExhausted `+
				`desc = not enough space in device class thin on node node-0`),
		event("big-data.0", "big-data", corev1.EventTypeNormal, 1,
			"waiting for first consumer to be created before binding"),
		event("orphan.0", "orphan", corev1.EventTypeWarning, 1, `storageclass.storage.k8s.io "fast-ssd" not found`),
	}
	return append(objs, nodeStatuses()...)
}

// newFixtureClient returns a fake client holding the fixture, with Events indexed as the API server
// selects them, and funcs (if any) intercepting its calls.
func newFixtureClient(t *testing.T, funcs *interceptor.Funcs) client.Client {
	t.Helper()
	s, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(fixture()...).
		WithIndex(&corev1.Event{}, placement.EventInvolvedObjectName, func(o client.Object) []string {
			return []string{o.(*corev1.Event).InvolvedObject.Name}
		})
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

func lvmCluster() *lvmv1alpha1.LVMCluster {
	paths := func(p ...lvmv1alpha1.DevicePath) *lvmv1alpha1.DeviceSelector {
		return &lvmv1alpha1.DeviceSelector{Paths: p}
	}
	return &lvmv1alpha1.LVMCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: testOperatorNamespace, Name: "lvmcluster"},
		Spec: lvmv1alpha1.LVMClusterSpec{Storage: lvmv1alpha1.Storage{DeviceClasses: []lvmv1alpha1.DeviceClass{
			{
				Name: "thin", Default: true, DeviceSelector: paths("/dev/vdb", "/dev/vdc"),
				ThinPoolConfig: &lvmv1alpha1.ThinPoolConfig{Name: "thin-pool", SizePercent: 90, OverprovisionRatio: 10},
			},
			{Name: "thick", DeviceSelector: paths("/dev/vdd")},
		}}},
		Status: lvmv1alpha1.LVMClusterStatus{
			State: lvmv1alpha1.LVMStatusFailed,
			Conditions: []metav1.Condition{{
				Type: lvmv1alpha1.ConditionVolumeGroupsReady, Status: metav1.ConditionFalse, Reason: "Failed",
				LastTransitionTime: metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
				Message: "node node-1, device class thick: Failed: device /dev/vdd of deviceSelector.paths " +
					"does not exist on the node",
			}},
		},
	}
}

func nodeStatuses() []client.Object {
	notSelected := []string{"is not in the device selector"}
	ex := func(name string, reasons ...string) lvmv1alpha1.ExcludedDevice {
		return lvmv1alpha1.ExcludedDevice{Name: name, Reasons: reasons}
	}
	return []client.Object{
		nodeStatus("node-0",
			lvmv1alpha1.VGStatus{
				Name: "thick", Status: lvmv1alpha1.VGStatusReady, Devices: []string{"/dev/vdd"},
				Excluded: []lvmv1alpha1.ExcludedDevice{
					ex("/dev/vda", "has children: vda1, vda2", notSelected[0]),
					ex("/dev/vdb", notSelected...), ex("/dev/vdc", notSelected...),
				},
				Capacity: thick("10236Mi", "3580Mi"),
			},
			lvmv1alpha1.VGStatus{
				Name: "thin", Status: lvmv1alpha1.VGStatusReady, Devices: []string{"/dev/vdb", "/dev/vdc"},
				Excluded: []lvmv1alpha1.ExcludedDevice{
					ex("/dev/vda", "has children: vda1, vda2", notSelected[0]), ex("/dev/vdd", notSelected...),
					ex("/dev/mapper/thin-thin--pool", notSelected[0], "is an LVM logical volume (type lvm)"),
					ex("/dev/loop1", notSelected[0], "is a loop device backing kubelet plugin storage"),
					ex("/dev/mapper/lvms-pvc-7", notSelected[0],
						"is the dm-crypt mapping of an LVM logical volume (type crypt)"),
				},
				Capacity: thin("20472Mi", "2044Mi", "18424Mi", "12.5", "4.1"),
			}),
		nodeStatus("node-1",
			lvmv1alpha1.VGStatus{
				Name: "thick", Status: lvmv1alpha1.VGStatusFailed,
				Reason: "device /dev/vdd of deviceSelector.paths does not exist on the node",
				Excluded: []lvmv1alpha1.ExcludedDevice{
					ex("/dev/vda", "has children: vda1", notSelected[0]), ex("/dev/vdb", notSelected...),
					ex("/dev/vdc", notSelected[0], "is mounted at /mnt/scratch"),
				},
			},
			lvmv1alpha1.VGStatus{
				Name: "thin", Status: lvmv1alpha1.VGStatusReady, Devices: []string{"/dev/vdb"},
				Excluded: []lvmv1alpha1.ExcludedDevice{
					ex("/dev/vda", "has children: vda1", notSelected[0]), ex("/dev/vdc", "is mounted at /mnt/scratch"),
					ex("/dev/loop0", notSelected[0], "is a loop device backing kubelet plugin storage"),
				},
				Capacity: thin("10236Mi", "1020Mi", "9212Mi", "70.0", "8.3"),
			}),
		nodeStatus("node-2",
			lvmv1alpha1.VGStatus{
				Name: "thick", Status: lvmv1alpha1.VGStatusReady, Devices: []string{"/dev/vdd"},
				Excluded: []lvmv1alpha1.ExcludedDevice{ex("/dev/vdb", notSelected...), ex("/dev/vdc", notSelected...)},
				Capacity: thick("51196Mi", "30716Mi"),
			},
			lvmv1alpha1.VGStatus{
				Name: "thin", Status: lvmv1alpha1.VGStatusDegraded,
				Reason: "thin pool thin-pool is 97.3% full of data (Degraded from 85%): delete volumes or " +
					"snapshots in it, or add disks to the device class so the pool can grow",
				Devices:  []string{"/dev/vdb", "/dev/vdc"},
				Excluded: []lvmv1alpha1.ExcludedDevice{ex("/dev/vdd", notSelected...)},
				Capacity: thin("20472Mi", "2044Mi", "18424Mi", "97.3", "41.0"),
			}),
	}
}

func nodeStatus(name string, vgs ...lvmv1alpha1.VGStatus) *lvmv1alpha1.LVMVolumeGroupNodeStatus {
	return &lvmv1alpha1.LVMVolumeGroupNodeStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: testOperatorNamespace, Name: name},
		Spec:       lvmv1alpha1.LVMVolumeGroupNodeStatusSpec{LiveNodeStatus: vgs},
	}
}

func thick(size, free string) *lvmv1alpha1.VGCapacity {
	return &lvmv1alpha1.VGCapacity{Size: resource.MustParse(size), Free: resource.MustParse(free)}
}

func thin(size, free, poolSize, data, meta string) *lvmv1alpha1.VGCapacity {
	c := thick(size, free)
	c.ThinPool = &lvmv1alpha1.ThinPoolCapacity{
		Name: "thin-pool", Size: resource.MustParse(poolSize), DataPercent: data, MetadataPercent: meta,
	}
	return c
}

func node(name string, annotations map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
}

func storageClass(name, deviceClass string) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       "topolvm.io",
		Parameters:        map[string]string{"csi.storage.k8s.io/fstype": "xfs"},
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
	if deviceClass != "" {
		sc.Parameters["topolvm.io/device-class"] = deviceClass
	}
	return sc
}

type pvcOption func(*corev1.PersistentVolumeClaim)

// withVolume binds the claim to the PersistentVolume pv.
func withVolume(pv string) pvcOption {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.VolumeName = pv
		c.Status.Phase = corev1.ClaimBound
	}
}

func withAnnotation(key, value string) pvcOption {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Annotations = map[string]string{key: value}
	}
}

func pvc(namespace, name, storageClass, size string, opts ...pvcOption) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &storageClass,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// pv is a topolvm.io PersistentVolume on node bound to claim ("namespace/name").
func pv(name, volumeHandle, node, size, claim string) *corev1.PersistentVolume {
	ns, claimName, _ := strings.Cut(claim, "/")
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: "topolvm.io", VolumeHandle: volumeHandle},
			},
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: claimName},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "topology.topolvm.io/node", Operator: corev1.NodeSelectorOpIn, Values: []string{node}},
				}}},
			}},
		},
	}
}

func lv(name, volumeID, node, deviceClass, size string) *topolvmv1.LogicalVolume {
	return &topolvmv1.LogicalVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: topolvmv1.LogicalVolumeSpec{
			Name: name, NodeName: node, DeviceClass: deviceClass, Size: resource.MustParse(size),
		},
		Status: topolvmv1.LogicalVolumeStatus{VolumeID: volumeID, CurrentSize: ptr.To(resource.MustParse(size))},
	}
}

// event is an Event about the claim default/<claim>, last seen minute minutes into the fixture's day.
func event(name, claim, eventType string, minute int, message string) *corev1.Event {
	at := metav1.NewTime(time.Date(2025, 1, 1, 0, minute, 0, 0, time.UTC))
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		InvolvedObject: corev1.ObjectReference{
			Kind: "PersistentVolumeClaim", Namespace: "default", Name: claim, APIVersion: "v1",
		},
		Type: eventType, Reason: "ProvisioningFailed", Message: message,
		FirstTimestamp: at, LastTimestamp: at,
	}
}
