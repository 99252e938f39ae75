package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// StorageClassOptions customise the StorageClass of a device class. Only additionalLabels may change
// after the device class is created.
type StorageClassOptions struct {
	// ReclaimPolicy of the StorageClass. Default Delete. Immutable.
	// +optional
	// +kubebuilder:default=Delete
	// +kubebuilder:validation:Enum=Delete;Retain
	ReclaimPolicy *corev1.PersistentVolumeReclaimPolicy `json:"reclaimPolicy,omitempty"`

	// VolumeBindingMode of the StorageClass. Default WaitForFirstConsumer, which lets the scheduler
	// pick the node by free capacity. Immutable.
	// +optional
	// +kubebuilder:default=WaitForFirstConsumer
	// +kubebuilder:validation:Enum=WaitForFirstConsumer;Immediate
	VolumeBindingMode *storagev1.VolumeBindingMode `json:"volumeBindingMode,omitempty"`

	// AdditionalParameters are added to the StorageClass parameters, at most 16. The two keys the
	// operator sets, topolvm.io/device-class and csi.storage.k8s.io/fstype, are reserved. Immutable.
	// +optional
	// +kubebuilder:default={}
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="storageClassOptions.additionalParameters is immutable (StorageClass parameters cannot change): create a new device class instead"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '')",message="storageClassOptions.additionalParameters may not have an empty key"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'topolvm.io/device-class' && k != 'csi.storage.k8s.io/fstype')",message="storageClassOptions.additionalParameters may not set topolvm.io/device-class or csi.storage.k8s.io/fstype: the operator sets them from the device class name and fstype"
	AdditionalParameters map[string]string `json:"additionalParameters,omitempty"`

	// AdditionalLabels are added to the StorageClass labels, at most 16, and may change at any time.
	// Keys are label keys ([prefix/]name) and values label values (checked by the webhook: a CRD schema
	// cannot bound the length of map values, so CEL cannot afford the check); the keys the operator
	// sets itself are reserved:
	// app.kubernetes.io/{managed-by,part-of,name,component}, owned-by.topolvm.io/*,
	// lvm.topolvm.io/owned-by-name, lvm.topolvm.io/owned-by-namespace and lvm.topolvm.io/device-class.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))",message="storageClassOptions.additionalLabels keys must be label keys: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['app.kubernetes.io/managed-by', 'app.kubernetes.io/part-of', 'app.kubernetes.io/name', 'app.kubernetes.io/component', 'lvm.topolvm.io/owned-by-name', 'lvm.topolvm.io/owned-by-namespace', 'lvm.topolvm.io/device-class']) && !k.startsWith('owned-by.topolvm.io/'))",message="storageClassOptions.additionalLabels may not set a key the operator sets itself (app.kubernetes.io/managed-by, part-of, name, component; owned-by.topolvm.io/*; lvm.topolvm.io/owned-by-name, owned-by-namespace, device-class): choose another key"
	AdditionalLabels map[string]string `json:"additionalLabels,omitempty"`
}
