package devcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// ProductImage is the product image's name in config/default; the overlay pins it by digest.
const ProductImage = "ghcr.io/lvm-operator/lvms"

// productTimeout bounds the wait for the operator's Deployment and its webhook certificate. A
// node unpacks the product image and starts its containers in about a minute when idle; make
// test starts the cluster beside the host lane's -race tests on two cores, where a run took
// longer than 4 minutes.
const productTimeout = 10 * time.Minute

// productOverlay installs what a user installs (config/default) with the product image pinned
// to the digest of the archive the nodes imported. kustomize wants the base as a path relative
// to the overlay.
const productOverlay = `# Written by lvms-dev up: config/default, the install a user applies, with the product image
# pinned to the digest of the archive the nodes imported (%[3]s).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %[1]s
%[5]simages:
- name: %[4]s
  digest: %[2]s
`

// readDigest returns the manifest digest in an image's .digest file (next to its archive).
func readDigest(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("product image digest (build it with lvms-dev image build): %w", err)
	}
	d := strings.TrimSpace(string(b))
	if !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
		return "", fmt.Errorf("%s: %q is not a sha256 digest", path, d)
	}
	return d, nil
}

// overlayComponents are the kustomize components the product overlay adds (relative to the
// repository), the patches the dev cluster puts on them, and manifests of its own it adds (file
// name to content).
func overlayComponents(cfg Config) (components []string, patches string, extra map[string]string) {
	extra = map[string]string{}
	if cfg.SchedulerExtender {
		components = append(components, ExtenderComponent)
		patches += extenderOverlayPatch
		extra["extender-service.yaml"] = extenderServiceYAML
	}
	if cfg.SnapshotMetadata {
		components = append(components, SnapshotMetadataComponent)
	}
	if cfg.Evacuator {
		components = append(components, EvacuatorComponent)
	}
	if cfg.Profiling {
		components = append(components, ProfilingComponent)
	}
	return components, patches, extra
}

// productOverlayDir is where the overlay is written.
func (c *cluster) productOverlayDir() string { return filepath.Join(c.l.Manifests(), "product") }

// installProduct applies the overlay and waits until the operator's Deployment is Available
// and its webhook configuration carries the CA it issued itself (the default certificate mode).
func (c *cluster) installProduct(ctx context.Context) error {
	return c.step("product (config/default)", func() error {
		dir := c.productOverlayDir()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create overlay dir: %w", err)
		}
		base, err := filepath.Rel(dir, filepath.Join(c.cfg.RepoDir, "config", "default"))
		if err != nil {
			return fmt.Errorf("overlay base: %w", err)
		}
		comps, patches, extra := overlayComponents(c.cfg)
		var extraResources string
		for _, name := range slices.Sorted(maps.Keys(extra)) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(extra[name]), 0o644); err != nil {
				return fmt.Errorf("write overlay: %w", err)
			}
			extraResources += "- " + name + "\n"
		}
		body := fmt.Sprintf(productOverlay, base, c.cfg.ProductDigest, c.cfg.ProductDigestFile, ProductImage,
			extraResources)
		if len(comps) > 0 {
			body += "components:\n"
		}
		for _, comp := range comps {
			rel, err := filepath.Rel(dir, filepath.Join(c.cfg.RepoDir, comp))
			if err != nil {
				return fmt.Errorf("overlay component: %w", err)
			}
			body += "- " + rel + "\n"
		}
		body += patches
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(body), 0o644); err != nil {
			return fmt.Errorf("write overlay: %w", err)
		}
		if err := c.kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-k", dir); err != nil {
			return err
		}
		timeout := fmt.Sprintf("--timeout=%ds", int(productTimeout.Seconds()))
		if err := c.kubectl(
			ctx,
			"-n",
			Namespace,
			"wait",
			"--for=condition=Available",
			"deployment",
			"--all",
			timeout,
		); err != nil {
			c.describeProduct(ctx)
			return err
		}
		return c.waitWebhookCA(ctx)
	})
}

// describeProduct writes, for a product that did not come up, its pods and the recent log of every
// container of its Deployments (also of the last crashed run) to the kubectl log the failure quotes.
func (c *cluster) describeProduct(ctx context.Context) {
	_ = c.kubectl(ctx, "-n", Namespace, "get", "pods", "-o", "wide")
	for _, d := range []string{
		"deployment/lvms-operator", "deployment/" + snapshotMetadataDeployment, "deployment/" + evacuatorDeployment,
	} {
		for _, previous := range []string{"--previous=false", "--previous=true"} {
			_ = c.kubectl(ctx, "-n", Namespace, "logs", d, "--all-containers", "--tail=20", previous)
		}
	}
}

// waitWebhookCA waits until every webhook of the product's webhook configurations has a CA
// bundle (the operator injects the CA of the certificate it issues).
func (c *cluster) waitWebhookCA(ctx context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.l.Kubeconfig())
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	var last string
	err = wait.PollUntilContextTimeout(
		ctx,
		500*time.Millisecond,
		productTimeout,
		true,
		func(ctx context.Context) (bool, error) {
			validating, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(
				ctx,
				metav1.ListOptions{},
			)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			mutating, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(
				ctx,
				metav1.ListOptions{},
			)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			missing := WebhooksWithoutCA(validating.Items, mutating.Items)
			last = "no CA bundle yet: " + strings.Join(missing, ", ")
			return len(missing) == 0, nil
		},
	)
	if err != nil {
		return failure("operator webhook certificate", c.l.Log("kubectl"), errors.Join(err, errors.New(last)))
	}
	return nil
}

// WebhooksWithoutCA names the validating and mutating webhooks that call a Service in the product's
// namespace and have no CA bundle yet.
func WebhooksWithoutCA(validating []admissionregistrationv1.ValidatingWebhookConfiguration,
	mutating []admissionregistrationv1.MutatingWebhookConfiguration) []string {
	var missing []string
	check := func(cfg, name string, cc admissionregistrationv1.WebhookClientConfig) {
		if s := cc.Service; s != nil && s.Namespace == Namespace && len(cc.CABundle) == 0 {
			missing = append(missing, cfg+"/"+name)
		}
	}
	for _, cfg := range validating {
		for _, wh := range cfg.Webhooks {
			check(cfg.Name, wh.Name, wh.ClientConfig)
		}
	}
	for _, cfg := range mutating {
		for _, wh := range cfg.Webhooks {
			check(cfg.Name, wh.Name, wh.ClientConfig)
		}
	}
	return missing
}
