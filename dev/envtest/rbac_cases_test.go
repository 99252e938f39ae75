package envtest

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// API groups of the cases.
const (
	lvmGroup     = "lvm.topolvm.io"
	topolvmGroup = "topolvm.io"
	storageGroup = "storage.k8s.io"
	webhookGroup = "admissionregistration.k8s.io"
	rbacGroup    = "rbac.authorization.k8s.io"
)

// allow and deny build the cases of the tables.
func allow(verb, group, resource, namespace string) privilegeCase {
	return privilegeCase{verb: verb, group: group, resource: resource, namespace: namespace, allowed: true}
}

func deny(verb, group, resource, namespace string) privilegeCase {
	return privilegeCase{verb: verb, group: group, resource: resource, namespace: namespace}
}

// with sets the body of a write.
func (c privilegeCase) with(body any) privilegeCase {
	c.body = body
	return c
}

// named addresses one object.
func (c privilegeCase) named(name string) privilegeCase {
	c.name = name
	return c
}

// nodeAgentCases: the node agent (lvms-node) reads the LVMCluster, reports its node, reconciles
// LogicalVolumes and annotates its Node; nothing else.
func nodeAgentCases() []privilegeCase {
	ns := testNamespace
	cases := []privilegeCase{
		allow("get", lvmGroup, "lvmclusters", ns),
		allow("list", lvmGroup, "lvmclusters", ns),
		allow("watch", lvmGroup, "lvmclusters", ns),
		allow("get", "", "nodes", ""),
		allow("patch", "", "nodes", ""),
		allow("create", lvmGroup, "lvmvolumegroupnodestatuses", ns).with(nodeStatusBody()),
		allow("patch", lvmGroup, "lvmvolumegroupnodestatuses", ns),
		allow("update", lvmGroup, "lvmvolumegroups", ns),
		allow("patch", topolvmGroup, "logicalvolumes", ""),
		allow("update", topolvmGroup, "logicalvolumes/status", ""),
		allow("create", "events.k8s.io", "events", ns).with(eventBody()),

		// No Secrets, no Pods.
		deny("list", "", "secrets", "kube-system"),
		deny("list", "", "secrets", ""),
		deny("get", "", "secrets", ns),
		deny("list", "", "pods", "kube-system"),
		deny("get", "", "pods", ns),
		// Its Node's annotations, not the Node's life or status.
		deny("delete", "", "nodes", ""),
		deny("update", "", "nodes/status", ""),
		deny("create", "", "nodes", ""),
		// What the operator and the CSI controller own.
		deny("create", storageGroup, "storageclasses", ""),
		deny("create", "apps", "daemonsets", ns),
		deny("create", "apps", "deployments", ns),
		deny("create", webhookGroup, "validatingwebhookconfigurations", ""),
		deny("patch", webhookGroup, "mutatingwebhookconfigurations", ""),
		deny("create", storageGroup, "csistoragecapacities", ns),
		deny("create", topolvmGroup, "logicalvolumes", ""),
		deny("delete", topolvmGroup, "logicalvolumes", ""),
		deny("update", lvmGroup, "lvmclusters", ns),
		deny("create", "", "persistentvolumes", ""),
		deny("delete", "", "persistentvolumes", ""),
		deny("delete", "", "persistentvolumeclaims", "default"),
		deny("create", "", "events", ns),
		// The lvm.topolvm.io objects live in the operator namespace: none anywhere else.
		deny("watch", lvmGroup, "lvmclusters", ""),
		deny("update", lvmGroup, "lvmvolumegroups", "default"),
		deny("create", lvmGroup, "lvmvolumegroupnodestatuses", "default"),
	}
	cases = append(cases, rbacDenials("lvms-node")...)
	return append(cases, escalationDenials("lvms-operator")...)
}

// operatorCases: the operator (lvms-operator) with the CSI sidecars of its Pod.
func operatorCases() []privilegeCase {
	ns := testNamespace
	cases := []privilegeCase{
		// config/rbac/operator/role.yaml: the LVMCluster and its operands.
		allow("update", lvmGroup, "lvmclusters/status", ns),
		allow("create", lvmGroup, "lvmvolumegroups", ns),
		allow("delete", lvmGroup, "lvmvolumegroupnodestatuses", ns),
		allow("apply", "apps", "daemonsets", ns).with(daemonSetApply()),
		allow("create", storageGroup, "storageclasses", "").with(storageClassBody()),
		allow("create", storageGroup, "csidrivers", ""),
		// CA injection: its own two webhook configurations, by name.
		allow("update", webhookGroup, "validatingwebhookconfigurations", "").
			named("lvms-validating-webhook-configuration"),
		allow("patch", webhookGroup, "mutatingwebhookconfigurations", "").named("lvms-mutating-webhook-configuration"),
		allow("create", topolvmGroup, "logicalvolumes", "").with(logicalVolumeBody()),
		allow("delete", topolvmGroup, "logicalvolumes", ""),
		allow("list", "", "nodes", ""),
		allow("create", "events.k8s.io", "events", ns).with(eventBody()),
		// Its namespaced Roles: the webhook certificate Secret, its own Pod, leader election.
		allow("get", "", "secrets", ns),
		allow("create", "", "secrets", ns),
		allow("get", "", "pods", ns),
		allow("create", "coordination.k8s.io", "leases", ns),
		// lvms-csi-sidecars: provisioner, resizer, snapshotter. The resizer watches Pods of every
		// namespace to tell whether a volume is in use, so Pods are readable cluster-wide.
		allow("list", "", "pods", "kube-system"),
		allow("create", "", "persistentvolumes", "").with(persistentVolumeBody()),
		allow("delete", "", "persistentvolumes", ""),
		allow("patch", "", "persistentvolumeclaims/status", "default"),
		allow("create", storageGroup, "csistoragecapacities", ns).with(capacityBody()),
		allow("get", "apps", "deployments", ns),
		allow("create", "snapshot.storage.k8s.io", "volumesnapshotcontents", ""),
		allow("create", "", "events", "default"),

		// Secrets only in its own namespace.
		deny("list", "", "secrets", "kube-system"),
		deny("list", "", "secrets", ""),
		deny("get", "", "secrets", "kube-system"),
		deny("create", "", "secrets", "default"),
		// Users' claims: the node-removal controller deletes those bound to volumes of a deleted Node,
		// but only with --delete-claims-of-removed-nodes (off by default); the role cannot depend
		// on a flag, so it always grants the delete.
		allow("delete", "", "persistentvolumeclaims", "default"),
		// Nodes are read only.
		deny("patch", "", "nodes", ""),
		deny("delete", "", "nodes", ""),
		deny("update", "", "nodes/status", ""),
		// Workloads only in its namespace: the node agent DaemonSet and, with changed block
		// tracking, the snapshot metadata endpoint's Deployment; no Pods of its own, no new
		// webhooks, no CRD changes.
		allow("create", "apps", "deployments", ns),
		deny("create", "apps", "deployments", "kube-system"),
		deny("delete", "apps", "deployments", "default"),
		deny("create", "", "pods", ns),
		deny("create", webhookGroup, "validatingwebhookconfigurations", ""),
		deny("delete", webhookGroup, "validatingwebhookconfigurations", ""),
		deny("create", "apiextensions.k8s.io", "customresourcedefinitions", ""),
		// Other webhooks, SCCs and workloads than its own.
		deny("update", webhookGroup, "validatingwebhookconfigurations", "").named("someone-elses-webhook"),
		deny("patch", webhookGroup, "mutatingwebhookconfigurations", "").named("someone-elses-webhook"),
		deny("patch", "security.openshift.io", "securitycontextconstraints", "").named("privileged"),
		deny("delete", "security.openshift.io", "securitycontextconstraints", "").named("privileged"),
		deny("create", "apps", "daemonsets", "kube-system"),
		deny("delete", "apps", "daemonsets", "kube-system"),
		deny("create", storageGroup, "csistoragecapacities", "default"),
		deny("create", "coordination.k8s.io", "leases", "kube-system"),
		deny("delete", "", "namespaces", "").named(ns),
		// Of the namespaces only kube-system, by name (its UID is the cluster's identity).
		deny("get", "", "namespaces", "").named("default"),
		deny("list", "", "namespaces", ""),
	}
	cases = append(cases, rbacDenials("lvms-operator")...)
	return append(cases, escalationDenials("lvms-node")...)
}

// rbacDenials: no RBAC object is created, changed or bound, least of all the account's own role.
func rbacDenials(own string) []privilegeCase {
	ns := testNamespace
	return []privilegeCase{
		deny("create", rbacGroup, "clusterroles", ""),
		deny("update", rbacGroup, "clusterroles", "").named(own),
		deny("create", rbacGroup, "clusterrolebindings", ""),
		deny("patch", rbacGroup, "clusterrolebindings", "").named(own),
		deny("create", rbacGroup, "roles", ns),
		deny("update", rbacGroup, "roles", ns).named("lvms-operator"),
		deny("create", rbacGroup, "rolebindings", ns),
		deny("bind", rbacGroup, "clusterroles", "").named("cluster-admin"),
		deny("escalate", rbacGroup, "clusterroles", "").named(own),
		deny("escalate", rbacGroup, "roles", ns),
	}
}

// escalationDenials: no shell in a Pod, no token or identity of another account (other).
func escalationDenials(other string) []privilegeCase {
	ns := testNamespace
	return []privilegeCase{
		deny("create", "", "pods/exec", ns),
		deny("create", "", "serviceaccounts/token", ns).named(other),
		deny("impersonate", "", "serviceaccounts", ns).named(other),
		deny("create", "", "serviceaccounts", ns),
		deny("update", "apiextensions.k8s.io", "customresourcedefinitions", "").named("lvmclusters.lvm.topolvm.io"),
	}
}

func nodeStatusBody() *lvmv1alpha1.LVMVolumeGroupNodeStatus {
	return &lvmv1alpha1.LVMVolumeGroupNodeStatus{
		TypeMeta:   metav1.TypeMeta{APIVersion: lvmv1alpha1.GroupVersion.String(), Kind: "LVMVolumeGroupNodeStatus"},
		ObjectMeta: metav1.ObjectMeta{Name: probeName, Namespace: testNamespace},
	}
}

func eventBody() *eventsv1.Event {
	return &eventsv1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: eventsv1.SchemeGroupVersion.String(), Kind: "Event"},
		ObjectMeta:          metav1.ObjectMeta{Name: probeName, Namespace: testNamespace},
		EventTime:           metav1.NowMicro(),
		ReportingController: "topolvm.io/node",
		ReportingInstance:   "node-1",
		Action:              "Probe",
		Reason:              "Probe",
		Type:                corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{
			APIVersion: lvmv1alpha1.GroupVersion.String(),
			Kind:       "LVMCluster",
			Namespace:  testNamespace,
			Name:       "my-lvmcluster",
		},
	}
}

func storageClassBody() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		TypeMeta:    metav1.TypeMeta{APIVersion: storagev1.SchemeGroupVersion.String(), Kind: "StorageClass"},
		ObjectMeta:  metav1.ObjectMeta{Name: probeName},
		Provisioner: "topolvm.io",
	}
}

func capacityBody() *storagev1.CSIStorageCapacity {
	capacity := resource.MustParse("10Gi")
	return &storagev1.CSIStorageCapacity{
		TypeMeta: metav1.TypeMeta{
			APIVersion: storagev1.SchemeGroupVersion.String(),
			Kind:       "CSIStorageCapacity",
		},
		ObjectMeta:       metav1.ObjectMeta{Name: probeName, Namespace: testNamespace},
		StorageClassName: "lvms-vg1",
		Capacity:         &capacity,
	}
}

// daemonSetApply is what the operator applies for the node agent, reduced to what is required.
func daemonSetApply() *appsv1ac.DaemonSetApplyConfiguration {
	labels := map[string]string{"app.kubernetes.io/name": probeName}
	return appsv1ac.DaemonSet(probeName, testNamespace).WithSpec(appsv1ac.DaemonSetSpec().
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("node").WithImage("ghcr.io/lvm-operator/lvms")))))
}

func logicalVolumeBody() *topolvmv1.LogicalVolume {
	lv := newLogicalVolume("1Gi")
	lv.TypeMeta = metav1.TypeMeta{APIVersion: topolvmv1.GroupVersion.String(), Kind: "LogicalVolume"}
	return lv
}

func persistentVolumeBody() *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: probeName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: "topolvm.io", VolumeHandle: "a1b2"},
			},
		},
	}
}
