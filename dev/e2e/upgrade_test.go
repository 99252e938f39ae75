//go:build e2e

package e2e

// The upgrade test (hack/upgrade.sh, make upgrade; docs/upgrade.md): the previous release is
// installed the way an install path installs it, claims of every kind are made and used, and the
// install is upgraded in place the way that path upgrades; afterwards no pod outside the product's
// namespace restarted, every volume reads back its data, new claims provision and the old ones
// expand, snapshot, restore and delete. hack/e2e.sh leaves it out: it needs a cluster without the
// product (lvms-dev up --no-product) and the previous release's tree and image.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// productImage is the image config/default and the chart name; each install pins a digest.
	productImage = "ghcr.io/lvm-operator/lvms"
	// helmRelease is the Helm release of the helm path.
	helmRelease = "lvms"
	// upgradeDataScript writes 8 MiB of random data and its checksum to every filesystem volume of
	// the app pod and to its block volume (the checksum of that in /thin/block.sum), then stays.
	upgradeDataScript = `set -e
for d in /thin /thick /sealed; do head -c 8388608 /dev/urandom >$d/data; (cd $d && sha256sum data >sum); done
head -c 8388608 /dev/urandom | tee /dev/xvda | sha256sum >/thin/block.sum
sync; echo written; exec sleep 1000000`
	// upgradeCheckScript prints "<volume>: OK" for every volume of the app pod whose data reads back.
	upgradeCheckScript = `for d in /thin /thick /sealed; do (cd $d && sha256sum -c sum >/dev/null 2>&1) && echo "$d: OK"; done
[ "$(head -c 8388608 /dev/xvda | sha256sum)" = "$(cat /thin/block.sum)" ] && echo "/dev/xvda: OK"; true`
	// restoredScript checks a volume restored from a snapshot of /thin, then stays.
	restoredScript = `cd /data && sha256sum -c sum && echo restored-ok; exec sleep 1000000`
)

// upgrade is what hack/upgrade.sh hands the test: the previous release's tree and the digests
// of both images, and the helm and kubectl binaries.
type upgrade struct {
	fromDir, fromDigest, toDir, toDigest string
	helm, kubectl                        string
}

// TestUpgrade runs the upgrade once per install path of UPGRADE_PATHS (helm, kustomize), one after
// the other on the same cluster; between two, the product is removed the way that path removes it.
func TestUpgrade(t *testing.T) {
	u := upgrade{
		fromDir: os.Getenv("UPGRADE_FROM_DIR"), fromDigest: os.Getenv("UPGRADE_FROM_DIGEST"),
		toDigest: os.Getenv("UPGRADE_TO_DIGEST"), helm: os.Getenv("HELM"), kubectl: os.Getenv("KUBECTL"),
	}
	if u.fromDir == "" {
		t.Skip("UPGRADE_FROM_DIR is not set: run hack/upgrade.sh (make upgrade)")
	}
	var err error
	if u.toDir, err = filepath.Abs(filepath.Join("..", "..")); err != nil {
		t.Fatal(err)
	}
	paths := strings.Fields(os.Getenv("UPGRADE_PATHS"))
	for i, path := range paths {
		if path != "helm" && path != "kustomize" {
			t.Fatalf("UPGRADE_PATHS: %q is not an install path (helm, kustomize)", path)
		}
		if !t.Run(path, func(t *testing.T) { u.run(t, path, i == len(paths)-1) }) {
			return
		}
	}
}

// run is one install path: install the previous release, make and use claims, upgrade, check.
func (u *upgrade) run(t *testing.T, path string, last bool) {
	e := connect(t)
	start := time.Now()
	u.install(e, path, u.fromDir, u.fromDigest)
	u.waitRollout(e, u.fromDigest)
	t.Logf("previous release installed (%s) in %s", path, time.Since(start).Round(time.Second))
	e.ensureLVMCluster()
	e.createNamespace()
	nodes := e.nodes()

	// Claims of every kind on the previous release, used by long-running pods.
	e.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: luksSecret},
		StringData: map[string]string{"key": "e2e passphrase, not a real one"},
	})
	e.encryptedStorageClass()
	e.claim("thin", thinClass, "1Gi", false, "")
	e.claim("thick", thickClass, "1Gi", false, "")
	e.claim("block", thinClass, "1Gi", true, "")
	e.claim("sealed", luksClass, "1Gi", false, "")
	app := newPod("app", upgradeDataScript)
	for _, v := range []string{"thin", "thick", "sealed"} {
		useClaim(app, v, "/"+v, "")
	}
	useClaim(app, "block", "", "/dev/xvda")
	e.create(app)
	e.podSays("app", "written")
	e.snapshot("before", thinClass, "thin")
	e.claim("restored", thinClass, "1Gi", false, "before")
	e.pod("reader", "restored", false, "", restoredScript)
	e.podSays("reader", "restored-ok")
	// A pod without volumes on every node: the upgrade must leave it alone as well.
	for _, node := range nodes {
		idle := newPod("idle-"+node, "exec sleep 1000000")
		idle.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
		e.create(idle)
		e.running("idle-" + node)
	}
	before := e.podsOutside(operatorNS)
	t.Logf(
		"made on the previous release: claims thin, thick, block, sealed (LUKS2), restored (from a snapshot); %d pods outside %s",
		len(before),
		operatorNS,
	)

	start = time.Now()
	u.upgradeInstall(e, path)
	u.waitRollout(e, u.toDigest)
	e.waitForReady()
	t.Logf("upgraded in place (%s) in %s", path, time.Since(start).Round(time.Second))

	rows := []invariant{e.samePods(before), e.policyInPlace()}
	rows = append(rows, e.dataReadsBack())
	rows = append(rows, e.afterUpgrade()...)
	rows = append(rows, e.deleteAndCount(nodes)...)
	if !logInvariants(t, "upgrade by "+path, rows) {
		t.Fatal("an invariant does not hold after the upgrade (table above)")
	}
	if !last {
		u.uninstall(e, path)
	}
}

// install installs the release of the tree dir with the image digest the way path does:
// `helm install` of its chart, or `kubectl apply --server-side -k` of an overlay of its
// config/default that pins the digest.
func (u *upgrade) install(e *env, path, dir, digest string) {
	e.t.Helper()
	if path == "helm" {
		u.run1(e, u.helm, "install", helmRelease, filepath.Join(dir, "charts", "lvms"), "--namespace", operatorNS,
			"--create-namespace", "--set", "image.digest="+digest)
		return
	}
	u.run1(e, u.kubectl, "apply", "--server-side", "-k", u.overlay(e, dir, digest))
}

// upgradeInstall upgrades to this tree's release as docs/upgrade.md says: the chart's CRDs applied
// first (helm upgrade never changes them), then `helm upgrade`; or the same `kubectl apply -k`.
func (u *upgrade) upgradeInstall(e *env, path string) {
	e.t.Helper()
	if path == "helm" {
		chart := filepath.Join(u.toDir, "charts", "lvms")
		u.run1(e, u.kubectl, "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(chart, "crds"))
		u.run1(e, u.helm, "upgrade", helmRelease, chart, "--namespace", operatorNS,
			"--set", "image.digest="+u.toDigest)
		return
	}
	u.install(e, path, u.toDir, u.toDigest)
}

// uninstall deletes the LVMCluster (its volume groups go) and then the product the way path does.
func (u *upgrade) uninstall(e *env, path string) {
	e.t.Helper()
	cluster := e2eLVMCluster()
	if err := e.c.Delete(e.ctx(), cluster); err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatalf("delete LVMCluster: %v", err)
	}
	e.waitForWithin(readyTimeout, "LVMCluster e2e gone", func(ctx context.Context) (bool, string, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(cluster), cluster)
		return apierrors.IsNotFound(err), "still there", client.IgnoreNotFound(err)
	})
	if path == "helm" {
		u.run1(e, u.helm, "uninstall", helmRelease, "--namespace", operatorNS, "--wait")
		return
	}
	u.run1(e, u.kubectl, "delete", "--wait", "-k", u.overlay(e, u.toDir, u.toDigest))
}

// overlay writes a kustomization of dir's config/default with the image pinned to digest, as a
// user pins a release, and returns its directory.
func (u *upgrade) overlay(e *env, dir, digest string) string {
	e.t.Helper()
	o := filepath.Join(e.t.TempDir(), "overlay")
	base, err := filepath.Rel(o, filepath.Join(dir, "config", "default"))
	if err != nil {
		e.t.Fatal(err)
	}
	k := fmt.Sprintf("resources:\n- %s\nimages:\n- name: %s\n  digest: %s\n", base, productImage, digest)
	if err := os.MkdirAll(o, 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(o, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return o
}

// run1 runs a command (helm, kubectl) against the cluster and fails the test with its output.
func (u *upgrade) run1(e *env, name string, args ...string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	e.t.Logf("%s %s:\n%s", filepath.Base(name), strings.Join(args, " "), strings.TrimSpace(string(out)))
}
