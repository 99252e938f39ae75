package dist

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// BundleDir is where the OLM bundle is written, relative to the repository root.
const BundleDir = "bundle"

// packageName is the OLM package of lvms; channel its only channel.
const (
	packageName = "lvms-operator"
	channel     = "alpha"
)

// operatorContainer is the operator's container in the Deployment.
const operatorContainer = "operator"

// bundleKinds are the kinds of the bundle's install (config/default with the snapshot metadata
// component, bundleInstall) and what the bundle does with each: OLM creates the namespace
// (OperatorGroup), the service accounts, the RBAC (from the CSV's permissions: OLM creates every
// service account they name, lvms-snapshot-metadata too, which no CSV deployment runs), the webhook
// Service and configuration (from webhookdefinitions, with a certificate it manages, so the Secret
// the self-signed mode keeps its certificate in is left out). The other Services (the metrics
// Services, lvms-snapshot-metadata), the NetworkPolicies (a kind bundles carry since
// operator-registry v1.55.0) and the ClusterRoles nothing binds travel as manifests of their own
// (extraManifests). The admission policy that keeps each node agent to its own node is not in
// the install: the operator writes it (OLM creates no admission policies from a bundle).
var bundleKinds = []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "Role", "ClusterRole",
	"RoleBinding", "ClusterRoleBinding", "Service", "Secret", "Deployment", "ValidatingWebhookConfiguration",
	"MutatingWebhookConfiguration", "NetworkPolicy"}

// bundleFiles renders the OLM bundle (registry+v1) of bundleInstall: the ClusterServiceVersion, the
// CRDs, the extra manifests and the annotations. The scheduler extender stays out of the bundle (it
// needs kube-scheduler configured by hand), and so does the evacuator (a Deployment of its own,
// which OLM would run on every install: a CSV has no switch per deployment); the snapshot metadata
// service is in it, off until the Subscription turns it on (bundleInstall).
func bundleFiles(inst *Install, o Options, sample []byte) (map[string][]byte, error) {
	inst, err := bundleInstall(inst, o)
	if err != nil {
		return nil, err
	}
	for _, obj := range inst.Objects {
		if !slices.Contains(bundleKinds, obj.GetKind()) {
			return nil, fmt.Errorf(
				"the install has a %s (%s) the OLM bundle does not know how to carry; teach dev/internal/dist",
				obj.GetKind(),
				obj.GetName(),
			)
		}
	}
	csv, err := clusterServiceVersion(inst, o, sample)
	if err != nil {
		return nil, err
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(csv)
	if err != nil {
		return nil, fmt.Errorf("convert CSV: %w", err)
	}
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u, "status")
	files := map[string][]byte{}
	if files[BundleDir+"/manifests/"+packageName+".clusterserviceversion.yaml"], err = toYAML(u); err != nil {
		return nil, err
	}
	for _, crd := range inst.find("CustomResourceDefinition") {
		name, err := crdFileName(crd)
		if err != nil {
			return nil, err
		}
		if files[BundleDir+"/manifests/"+name], err = toYAML(crd.Object); err != nil {
			return nil, err
		}
	}
	extra, err := extraManifests(inst)
	if err != nil {
		return nil, err
	}
	for name, b := range extra {
		files[BundleDir+"/manifests/"+name] = b
	}
	files[BundleDir+"/metadata/annotations.yaml"] = []byte(annotationsYAML)
	return files, nil
}

// webhookPortName is the name of the operator container's webhook port; the install's webhook
// Service targets it, and so does the one OLM creates from the webhookdefinitions.
const webhookPortName = "webhook"

// extraManifests are the install's objects the CSV does not describe, which OLM creates from the
// bundle as they are (the namespaced ones in the operator namespace): every Service but the
// webhook's, every NetworkPolicy, and every ClusterRole no binding of the install refers to (lvms-metrics-reader and
// lvms-profile-reader, for users to bind). Keyed by the file names operator-sdk gives them: <name>_<group>_<version>_<kind>.
func extraManifests(inst *Install) (map[string][]byte, error) {
	bound := map[string]bool{}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, b := range inst.find(kind) {
			if k, _, _ := unstructured.NestedString(b.Object, "roleRef", "kind"); k == "ClusterRole" {
				name, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
				bound[name] = true
			}
		}
	}
	var objs []*unstructured.Unstructured
	for _, r := range inst.find("ClusterRole") {
		if !bound[r.GetName()] {
			objs = append(objs, r)
		}
	}
	for _, svc := range inst.find("Service") {
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		if !slices.ContainsFunc(ports, func(p any) bool {
			m, _ := p.(map[string]any)
			return m["targetPort"] == webhookPortName
		}) {
			objs = append(objs, svc)
		}
	}
	objs = append(objs, inst.find("NetworkPolicy")...)
	files := map[string][]byte{}
	for _, o := range objs {
		gv := strings.ReplaceAll(o.GetAPIVersion(), "/", "_")
		name := strings.ToLower(o.GetName() + "_" + gv + "_" + o.GetKind() + ".yaml")
		c := o.DeepCopy()
		unstructured.RemoveNestedField(c.Object, "metadata", "namespace")
		b, err := toYAML(c.Object)
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}

const annotationsYAML = generatedHeader + `annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: ` + packageName + `
  operators.operatorframework.io.bundle.channels.v1: ` + channel + `
  operators.operatorframework.io.bundle.channel.default.v1: ` + channel + `
`

func clusterServiceVersion(inst *Install, o Options, sample []byte) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	v, err := semver.Parse(o.Version)
	if err != nil {
		return nil, fmt.Errorf("version %q: %w", o.Version, err)
	}
	deploy, err := bundleDeployment(inst, o)
	if err != nil {
		return nil, err
	}
	strategy, err := permissions(inst)
	if err != nil {
		return nil, err
	}
	strategy.DeploymentSpecs = []operatorsv1alpha1.StrategyDeploymentSpec{
		{Name: deploy.Name, Spec: deploy.Spec, Label: deploy.Labels},
	}
	owned, err := ownedCRDs(inst)
	if err != nil {
		return nil, err
	}
	webhooks, err := webhookDefinitions(inst, deploy)
	if err != nil {
		return nil, err
	}
	examples, err := almExamples(sample)
	if err != nil {
		return nil, err
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{
			APIVersion: operatorsv1alpha1.SchemeGroupVersion.String(),
			Kind:       operatorsv1alpha1.ClusterServiceVersionKind,
		},
		ObjectMeta: metav1.ObjectMeta{Name: packageName + ".v" + o.Version, Annotations: map[string]string{
			"alm-examples":   examples,
			"capabilities":   "Basic Install",
			"categories":     "Storage",
			"containerImage": containerImage(deploy),
			"description":    "Local disks as dynamically provisioned, capacity-aware LVM volumes",
			"repository":     "https://github.com/lvm-operator/lvm-operator",
			"operators.operatorframework.io/suggested-namespace": inst.Namespace,
		}},
		Spec: csvSpec(v, strategy, owned, webhooks),
	}
	csv.Spec.RelatedImages = relatedImages(deploy)
	return csv, nil
}

func csvSpec(
	v semver.Version,
	strategy *operatorsv1alpha1.StrategyDetailsDeployment,
	owned []operatorsv1alpha1.CRDDescription,
	webhooks []operatorsv1alpha1.WebhookDescription,
) operatorsv1alpha1.ClusterServiceVersionSpec {
	return operatorsv1alpha1.ClusterServiceVersionSpec{
		DisplayName: "LVM Storage (lvms)",
		Description: csvDescription,
		Version:     version.OperatorVersion{Version: v},
		Maturity:    channel,
		Provider: operatorsv1alpha1.AppLink{
			Name: "lvms project",
			URL:  "https://github.com/lvm-operator/lvm-operator",
		},
		Maintainers: []operatorsv1alpha1.Maintainer{
			{Name: "lvms maintainers", Email: "lvms-maintainers@lvm-operator.invalid"},
		},
		Links: []operatorsv1alpha1.AppLink{
			{Name: "Source", URL: "https://github.com/lvm-operator/lvm-operator"},
		},
		Keywords:       []string{"storage", "lvm", "csi", "topolvm", "local storage"},
		MinKubeVersion: "1.30.0",
		InstallModes: []operatorsv1alpha1.InstallMode{
			{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: true},
			{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Supported: true},
			{Type: operatorsv1alpha1.InstallModeTypeMultiNamespace, Supported: false},
			{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: false},
		},
		InstallStrategy: operatorsv1alpha1.NamedInstallStrategy{
			StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment,
			StrategySpec: *strategy,
		},
		CustomResourceDefinitions: operatorsv1alpha1.CustomResourceDefinitions{Owned: owned},
		WebhookDefinitions:        webhooks,
	}
}

const csvDescription = `lvms turns the local disks of the cluster's nodes into dynamically provisioned, capacity-aware
persistent volumes. Create one LVMCluster; lvms finds the blank disks on every selected node, builds an
LVM volume group (and a thin pool) on each, publishes a StorageClass per device class, and provisions,
expands, snapshots and clones PVCs as LVM logical volumes on the node the scheduler picked by free
capacity. It speaks the API of OpenShift LVM Storage and TopoLVM (CSI driver topolvm.io).`

// webhookCertVolume is the volume that projects the self-issued webhook certificate Secret into
// the operator container; OLM mounts its own certificate at the same path.
const webhookCertVolume = "webhook-cert"

// bundleDeployment is the operator Deployment as OLM runs it: OLM issues the webhook certificate
// and mounts it where controller-runtime looks, so the operator must not issue its own, and the
// Secret volume that would carry it (and clash with OLM's mount) is left out. The operator
// container is changed by operatorUnderOLM.
func bundleDeployment(inst *Install, o Options) (*appsv1.Deployment, error) {
	u, err := inst.one("Deployment")
	if err != nil {
		return nil, err
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		return nil, fmt.Errorf("decode deployment %s: %w", u.GetName(), err)
	}
	pod := &d.Spec.Template.Spec
	pod.Volumes = slices.DeleteFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == webhookCertVolume })
	found := false
	for i := range pod.Containers {
		c := &pod.Containers[i]
		c.VolumeMounts = slices.DeleteFunc(
			c.VolumeMounts,
			func(m corev1.VolumeMount) bool { return m.Name == webhookCertVolume },
		)
		if c.Name == operatorContainer {
			operatorUnderOLM(c, o.SnapshotMetadataComponent != "")
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("deployment %s has no container %q", d.Name, operatorContainer)
	}
	return d, nil
}

// operatorUnderOLM changes the operator container for OLM: the webhook certificate is OLM's
// (--webhook-cert-mode=external), and the snapshot metadata service is off by default. The bundle
// carries its objects (snapshotMetadata: bundleInstall) but drops --snapshot-metadata, which the
// component adds: under OLM a Subscription turns the service on with spec.config.env
// LVMS_SNAPSHOT_METADATA=true (the flag's default follows it), OLM's one switch per install. With
// the service, RELATED_IMAGE_SNAPSHOT_METADATA names its sidecar's image (unless config/ sets it
// already), so that the image spec.relatedImages lists is the one the operator runs, and tools
// that pin or mirror a bundle's images change both.
func operatorUnderOLM(c *corev1.Container, snapshotMetadata bool) {
	c.Args = slices.DeleteFunc(c.Args, func(a string) bool {
		return strings.HasPrefix(a, "--webhook-cert-mode") ||
			a == snapshotMetadataFlag || strings.HasPrefix(a, snapshotMetadataFlag+"=")
	})
	c.Args = append(c.Args, "--webhook-cert-mode=external")
	if !snapshotMetadata ||
		slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == snapshotMetadataImageEnv }) {
		return
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: snapshotMetadataImageEnv, Value: snapshotMetadataSidecarImage})
}

// relatedImages are the images the bundle runs, for tools that mirror or pin them: every container
// image of the CSV's deployments and every image a RELATED_IMAGE_ variable of theirs names (the
// images the operator runs in Deployments of its own), each once, named after its container or
// variable.
func relatedImages(d *appsv1.Deployment) []operatorsv1alpha1.RelatedImage {
	var out []operatorsv1alpha1.RelatedImage
	add := func(name, image string) {
		listed := slices.ContainsFunc(out, func(r operatorsv1alpha1.RelatedImage) bool { return r.Image == image })
		if image != "" && !listed {
			out = append(out, operatorsv1alpha1.RelatedImage{Name: name, Image: image})
		}
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		add(c.Name, c.Image)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if name, ok := strings.CutPrefix(e.Name, relatedImagePrefix); ok {
				add(strings.ReplaceAll(strings.ToLower(name), "_", "-"), e.Value)
			}
		}
	}
	return out
}

func containerImage(d *appsv1.Deployment) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == operatorContainer {
			return c.Image
		}
	}
	return ""
}

// almExamples is the CSV's alm-examples: the LVMCluster sample as a JSON list.
func almExamples(sample []byte) (string, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(sample, &obj); err != nil {
		return "", fmt.Errorf("decode LVMCluster sample: %w", err)
	}
	b, err := json.MarshalIndent([]any{obj}, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode alm-examples: %w", err)
	}
	return string(b), nil
}

// webhookDefinitions carries the install's validating and mutating webhooks into the CSV. The two
// kinds share every field the CSV needs but reinvocationPolicy (mutating only), so both decode as a
// ValidatingWebhookConfiguration and that one field is read from the object.
func webhookDefinitions(inst *Install, d *appsv1.Deployment) ([]operatorsv1alpha1.WebhookDescription, error) {
	var out []operatorsv1alpha1.WebhookDescription
	for _, k := range []struct {
		kind string
		typ  operatorsv1alpha1.WebhookAdmissionType
	}{
		{"ValidatingWebhookConfiguration", operatorsv1alpha1.ValidatingAdmissionWebhook},
		{"MutatingWebhookConfiguration", operatorsv1alpha1.MutatingAdmissionWebhook},
	} {
		kind, typ := k.kind, k.typ
		for _, u := range inst.find(kind) {
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cfg); err != nil {
				return nil, fmt.Errorf("decode %s: %w", u.GetName(), err)
			}
			raw, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for i, w := range cfg.Webhooks {
				if w.ClientConfig.Service == nil {
					return nil, fmt.Errorf("webhook %s: only service webhooks can go into a bundle", w.Name)
				}
				desc := operatorsv1alpha1.WebhookDescription{
					GenerateName: w.Name, Type: typ, DeploymentName: d.Name, ContainerPort: 443,
					TargetPort: new(intstr.FromString(webhookPortName)), Rules: w.Rules, FailurePolicy: w.FailurePolicy,
					MatchPolicy: w.MatchPolicy, SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds,
					AdmissionReviewVersions: w.AdmissionReviewVersions, WebhookPath: w.ClientConfig.Service.Path,
				}
				if m, ok := raw[i].(map[string]any); ok {
					if p, ok := m["reinvocationPolicy"].(string); ok {
						desc.ReinvocationPolicy = new(admissionregistrationv1.ReinvocationPolicyType(p))
					}
				}
				out = append(out, desc)
			}
		}
	}
	return out, nil
}

// ownedCRDs describes the CRDs the operator owns, one entry per served version.
func ownedCRDs(inst *Install) ([]operatorsv1alpha1.CRDDescription, error) {
	var out []operatorsv1alpha1.CRDDescription
	for _, crd := range inst.find("CustomResourceDefinition") {
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
		if err != nil || kind == "" {
			return nil, fmt.Errorf("CRD %s: no kind or versions", crd.GetName())
		}
		for _, v := range versions {
			m, _ := v.(map[string]any)
			name, _ := m["name"].(string)
			out = append(out, operatorsv1alpha1.CRDDescription{Name: crd.GetName(), Version: name, Kind: kind,
				DisplayName: kind, Description: crdDescriptions[kind]})
		}
	}
	return out, nil
}

var crdDescriptions = map[string]string{
	"LVMCluster":               "The one object an admin creates: device classes, the disks and nodes they use, thin pools and StorageClass options.",
	"LVMVolumeGroup":           "One device class as the node agents see it (created by the operator).",
	"LVMVolumeGroupNodeStatus": "The volume groups of one node and the disks they use or excluded, with reasons.",
	"LogicalVolume":            "One LVM logical volume of a PVC or snapshot on one node (TopoLVM API).",
}

// permissions turns the install's (Cluster)Roles and their bindings into the CSV's per-service-
// account permissions.
func permissions(inst *Install) (*operatorsv1alpha1.StrategyDetailsDeployment, error) {
	rules := map[string][]rbacv1.PolicyRule{}
	for _, kind := range []string{"Role", "ClusterRole"} {
		for _, u := range inst.find(kind) {
			r := &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r); err != nil {
				return nil, fmt.Errorf("decode %s %s: %w", kind, u.GetName(), err)
			}
			rules[kind+"/"+r.Name] = r.Rules
		}
	}
	s := &operatorsv1alpha1.StrategyDetailsDeployment{}
	ns, cluster := map[string][]rbacv1.PolicyRule{}, map[string][]rbacv1.PolicyRule{}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, u := range inst.find(kind) {
			b := &rbacv1.RoleBinding{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, b); err != nil {
				return nil, fmt.Errorf("decode %s %s: %w", kind, u.GetName(), err)
			}
			r, ok := rules[b.RoleRef.Kind+"/"+b.RoleRef.Name]
			if !ok {
				return nil, fmt.Errorf(
					"%s %s refers to %s %s, which the install does not have",
					kind,
					b.Name,
					b.RoleRef.Kind,
					b.RoleRef.Name,
				)
			}
			target := cluster
			if kind == "RoleBinding" {
				target = ns
			}
			for _, sub := range b.Subjects {
				if sub.Kind != rbacv1.ServiceAccountKind {
					return nil, fmt.Errorf(
						"%s %s binds a %s; a bundle only binds service accounts",
						kind,
						b.Name,
						sub.Kind,
					)
				}
				target[sub.Name] = append(target[sub.Name], r...)
			}
		}
	}
	for _, sa := range sortedKeys(ns) {
		s.Permissions = append(
			s.Permissions,
			operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: ns[sa]},
		)
	}
	for _, sa := range sortedKeys(cluster) {
		s.ClusterPermissions = append(
			s.ClusterPermissions,
			operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: cluster[sa]},
		)
	}
	return s, nil
}
