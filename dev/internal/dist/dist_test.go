package dist

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	validator "github.com/operator-framework/api/pkg/validation/interfaces"

	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
)

// repoFiles renders the repository's own config/ once per test.
func repoFiles(t *testing.T) map[string][]byte {
	t.Helper()
	root := filepath.Join("..", "..", "..")
	files, err := Files(Options{
		ConfigDir:                 filepath.Join(root, "config", "default"),
		SampleFile:                filepath.Join(root, "config", "samples", "lvm_v1alpha1_lvmcluster.yaml"),
		MonitoringDir:             filepath.Join(root, "config", "prometheus"),
		Version:                   "0.1.0",
		ExtenderComponent:         filepath.Join(root, "config", "components", "scheduler-extender"),
		SnapshotMetadataComponent: filepath.Join(root, "config", "components", "snapshot-metadata"),
		EvacuatorComponent:        filepath.Join(root, "config", "components", "evacuator"),
	})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return files
}

// validateBundle writes files to a temporary directory, loads the bundle and returns it with the
// validators' errors.
func validateBundle(t *testing.T, files map[string][]byte) (*manifests.Bundle, []errors.Error) {
	t.Helper()
	dir := t.TempDir()
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	bundle, err := manifests.GetBundleFromDir(filepath.Join(dir, BundleDir))
	if err != nil {
		t.Fatalf("load bundle: %v", err)
	}
	var errs []errors.Error
	validators := slices.Concat(
		validation.DefaultBundleValidators,
		validator.Validators{validation.GoodPracticesValidator},
	)
	for _, res := range validators.Validate(bundle.ObjectsToValidate()...) {
		for _, e := range res.Errors {
			if e.Level == errors.LevelError {
				errs = append(errs, e)
			}
		}
	}
	return bundle, errs
}

// TestBundleValidatorsCatchABrokenCSV makes sure the validation above can fail: a CSV without
// install modes is refused.
func TestBundleValidatorsCatchABrokenCSV(t *testing.T) {
	files := repoFiles(t)
	name := BundleDir + "/manifests/" + packageName + ".clusterserviceversion.yaml"
	files[name] = bytes.ReplaceAll(files[name], []byte("installModes:"), []byte("installModez:"))
	if _, errs := validateBundle(t, files); len(errs) == 0 {
		t.Fatal("a CSV without installModes passed validation")
	}
}

// TestBundleValidates runs operator-framework's bundle validators (those `operator-sdk bundle
// validate` runs by default, plus its good-practices checks) on the rendered bundle.
func TestBundleValidates(t *testing.T) {
	bundle, errs := validateBundle(t, repoFiles(t))
	for _, e := range errs {
		t.Errorf("%v", e)
	}
	if bundle.CSV == nil || len(bundle.V1CRDs) != 4 {
		t.Fatalf("bundle has CSV %v and %d CRDs, want a CSV and 4 CRDs", bundle.CSV != nil, len(bundle.V1CRDs))
	}
	csv := bundle.CSV
	var types []string
	for _, w := range csv.Spec.WebhookDefinitions {
		types = append(types, string(w.Type)+" "+ptr.Deref(w.WebhookPath, ""))
	}
	want := []string{"ValidatingAdmissionWebhook /validate-lvm-topolvm-io-v1alpha1-lvmcluster",
		"MutatingAdmissionWebhook /mutate-lvm-topolvm-io-v1alpha1-lvmcluster"}
	if !slices.Equal(types, want) {
		t.Errorf("CSV webhook definitions %q, want %q", types, want)
	}
	perms := map[string]bool{}
	for _, p := range csv.Spec.InstallStrategy.StrategySpec.ClusterPermissions {
		perms[p.ServiceAccountName] = true
	}
	if !perms["lvms-operator"] || !perms["lvms-node"] {
		t.Errorf("cluster permissions for %v, want separate ones for lvms-operator and lvms-node", perms)
	}
	pod := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec
	args := strings.Join(pod.Containers[0].Args, " ")
	if !strings.Contains(args, "--webhook-cert-mode=external") {
		t.Errorf("operator args %q: under OLM the webhook certificate comes from OLM", args)
	}
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			t.Errorf(
				"volume %q mounts Secret %q: under OLM the webhook certificate volume is OLM's",
				v.Name,
				v.Secret.SecretName,
			)
		}
	}
}

// TestBundleCarriesExtraObjects: under OLM the metrics Services, the snapshot metadata Service, the
// NetworkPolicies and the reader ClusterRoles, which the CSV cannot describe, travel as manifests of
// their own; the
// webhook Service does not (OLM creates its own from the webhookdefinitions).
func TestBundleCarriesExtraObjects(t *testing.T) {
	bundle, errs := validateBundle(t, repoFiles(t))
	for _, e := range errs {
		t.Errorf("%v", e)
	}
	var got []string
	for _, o := range bundle.Objects {
		if k := o.GetKind(); k != "ClusterServiceVersion" && k != "CustomResourceDefinition" {
			got = append(got, k+"/"+o.GetName())
			if o.GetNamespace() != "" {
				t.Errorf("%s/%s names namespace %q; OLM puts it in the operator's", k, o.GetName(), o.GetNamespace())
			}
		}
	}
	slices.Sort(got)
	want := []string{"ClusterRole/lvms-metrics-reader", "ClusterRole/lvms-profile-reader",
		"NetworkPolicy/lvms-node", "NetworkPolicy/lvms-operator", "NetworkPolicy/lvms-snapshot-metadata",
		"Service/lvms-node-metrics", "Service/lvms-operator-metrics", "Service/lvms-snapshot-metadata"}
	if !slices.Equal(got, want) {
		t.Errorf("bundle objects besides the CSV and CRDs: %q, want %q", got, want)
	}
}

// TestBundleOffersSnapshotMetadata: the bundle carries the snapshot metadata service's RBAC (its
// Service is checked above) and its sidecar image, but leaves it off (no --snapshot-metadata: a
// Subscription turns it on with LVMS_SNAPSHOT_METADATA=true); the scheduler extender stays out.
func TestBundleOffersSnapshotMetadata(t *testing.T) {
	bundle, errs := validateBundle(t, repoFiles(t))
	for _, e := range errs {
		t.Errorf("%v", e)
	}
	spec := bundle.CSV.Spec.InstallStrategy.StrategySpec
	op := spec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0]
	for _, a := range op.Args {
		if strings.HasPrefix(a, snapshotMetadataFlag) || strings.HasPrefix(a, "--pod-mutating-webhook") {
			t.Errorf("operator arg %q: the bundle must not turn on an optional component", a)
		}
	}
	env := map[string]string{}
	for _, e := range op.Env {
		env[e.Name] = e.Value
	}
	if env[snapshotMetadataImageEnv] != lvmcluster.DefaultSnapshotMetadataSidecarImage {
		t.Errorf("operator env %s = %q, want %q", snapshotMetadataImageEnv, env[snapshotMetadataImageEnv],
			lvmcluster.DefaultSnapshotMetadataSidecarImage)
	}
	related := bundle.CSV.Spec.RelatedImages
	if !slices.ContainsFunc(related, func(r operatorsv1alpha1.RelatedImage) bool {
		return r.Image == lvmcluster.DefaultSnapshotMetadataSidecarImage
	}) {
		t.Errorf("related images %+v lack %s", related, lvmcluster.DefaultSnapshotMetadataSidecarImage)
	}
	allows := func(perms []operatorsv1alpha1.StrategyDeploymentPermissions, sa, group, resource, verb string) bool {
		for _, p := range perms {
			for _, r := range p.Rules {
				if p.ServiceAccountName == sa && slices.Contains(r.APIGroups, group) &&
					slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
					return true
				}
			}
		}
		return false
	}
	const sa = lvmcluster.SnapshotMetadataName
	for _, tt := range []struct {
		perms                     []operatorsv1alpha1.StrategyDeploymentPermissions
		account, group, res, verb string
	}{
		{spec.ClusterPermissions, "lvms-operator", "cbt.storage.k8s.io", "snapshotmetadataservices", "patch"},
		{spec.Permissions, "lvms-operator", "apps", "deployments", "create"},
		{spec.ClusterPermissions, sa, "authentication.k8s.io", "tokenreviews", "create"},
		{spec.ClusterPermissions, sa, "topolvm.io", "logicalvolumes", "watch"},
		{spec.Permissions, sa, "", "pods", "list"},
	} {
		if !allows(tt.perms, tt.account, tt.group, tt.res, tt.verb) {
			t.Errorf("the CSV does not let %s %s %s.%s", tt.account, tt.verb, tt.res, tt.group)
		}
	}
	for _, w := range bundle.CSV.Spec.WebhookDefinitions {
		if w.GenerateName == "pod-hook.topolvm.io" {
			t.Errorf("the CSV has the scheduler extender's pod webhook")
		}
	}
}

// TestChartIsParameterized checks that the chart installs into any namespace with any image: no
// template names the install namespace or the operator image literally.
func TestChartIsParameterized(t *testing.T) {
	files := repoFiles(t)
	var templates int
	for name, b := range files {
		if !strings.HasPrefix(name, ChartDir+"/templates/") || !strings.HasSuffix(name, ".yaml") {
			continue
		}
		templates++
		for _, literal := range []string{"namespace: lvms-system", "ghcr.io/lvm-operator/lvms", "kind: Namespace"} {
			if bytes.Contains(b, []byte(literal)) {
				t.Errorf("%s contains %q; it must come from the release or values", name, literal)
			}
		}
	}
	if templates < 10 {
		t.Fatalf("chart has %d templates; the install has more objects", templates)
	}
	deploy := files[ChartDir+"/templates/deployment-lvms-operator.yaml"]
	if !bytes.Contains(deploy, []byte(tplImage)) {
		t.Errorf("operator deployment template does not take its image from values")
	}
	if !bytes.Contains(deploy, []byte("name: "+profilingEnv+"\n          value: '"+tplProfiling+"'")) {
		t.Errorf("operator deployment template does not take %s from values:\n%s", profilingEnv, deploy)
	}
}

// TestRenderIsStable renders twice: the output must not depend on map order or time.
func TestRenderIsStable(t *testing.T) {
	a, b := repoFiles(t), repoFiles(t)
	if len(a) != len(b) {
		t.Fatalf("renders differ in file count: %d, %d", len(a), len(b))
	}
	for name, content := range a {
		if !bytes.Equal(content, b[name]) {
			t.Errorf("%s differs between two renders", name)
		}
	}
}

// TestCommittedOutputsAreCurrent fails when dist/, the chart or the bundle in the tree differ from
// what config/ renders (someone edited them by hand, or forgot `make dist`).
func TestCommittedOutputsAreCurrent(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	for name, want := range repoFiles(t) {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%s: %v (run make dist)", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale or edited by hand; run make dist", name)
		}
	}
}

func TestParseImage(t *testing.T) {
	tests := []struct{ in, repo, tag, digest string }{
		{"ghcr.io/lvm-operator/lvms:v0.1.0", "ghcr.io/lvm-operator/lvms", "v0.1.0", ""},
		{"ghcr.io/lvm-operator/lvms@sha256:ab", "ghcr.io/lvm-operator/lvms", "", "sha256:ab"},
		{"localhost:5000/lvms:dev@sha256:ab", "localhost:5000/lvms", "dev", "sha256:ab"},
		{"localhost:5000/lvms", "localhost:5000/lvms", "", ""},
	}
	for _, tt := range tests {
		got := parseImage(tt.in)
		if got != (imageRef{tt.repo, tt.tag, tt.digest}) {
			t.Errorf("parseImage(%q) = %+v", tt.in, got)
		}
	}
}
