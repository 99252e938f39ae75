//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/demo"
)

const (
	// luksClass is the encrypted StorageClass of testEncryptedVolume over the thin device class.
	luksClass = "e2e-luks2"
	// luksSecret holds the passphrase in the test's namespace.
	luksSecret = "luks-key"
)

// testEncryptedVolume provisions a claim of an encrypted StorageClass (topolvm.io/encryption: luks2,
// node-stage and node-expand secrets) as an admin sets one up: a pod writes data; the LV carries a
// LUKS2 header (cryptsetup luksDump on the node); deleting the pod unstages the volume (the dm-crypt
// mapping is closed); a second pod on the same node stages it again and reads the data back; the
// claim grows from 1Gi to 2Gi and df in the running pod sees the filesystem in the mapping grow.
func testEncryptedVolume(t *testing.T) {
	fullSetOnly(t, "LUKS-encrypted claims; luksFormat's argon2id benchmark alone took 4 to 8 min there")
	e := newEnv(t)
	e.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: luksSecret},
		StringData: map[string]string{"key": "e2e passphrase, not a real one"},
	})
	e.encryptedStorageClass()
	e.claim("sealed", luksClass, "1Gi", false, "")
	e.pod("writer", "sealed", false, "", writeScript)
	writer, out := e.finished("writer")
	if !strings.Contains(out, "read=e2e-data") || !strings.Contains(out, "fstype=ext4") {
		t.Fatalf("writer printed %q, want read=e2e-data and fstype=ext4", out)
	}
	node := writer.Spec.NodeName
	pv, lv := e.volumeOf("sealed")
	if got := pv.Spec.CSI.VolumeAttributes["topolvm.io/encryption"]; got != "luks2" ||
		pv.Spec.CSI.NodeStageSecretRef == nil || pv.Spec.CSI.NodeExpandSecretRef == nil {
		t.Fatalf(
			"PV %s: volume attributes %v, node-stage secret %v, node-expand secret %v; want luks2 and both secrets",
			pv.Name,
			pv.Spec.CSI.VolumeAttributes,
			pv.Spec.CSI.NodeStageSecretRef,
			pv.Spec.CSI.NodeExpandSecretRef,
		)
	}
	id := lv.Status.VolumeID
	dump := e.onAgent(node, "cryptsetup luksDump /dev/thin/"+id)
	version := strings.Join(strings.Fields(linesStartingWith(dump, "Version:")), " ")
	t.Logf("cryptsetup luksDump /dev/thin/%s on %s: %q", id, node, version)
	if version != "Version: 2" {
		t.Fatalf("LV %s is not LUKS2:\n%s", id, dump)
	}

	// The writer has ended; deleting it makes the kubelet unpublish and unstage the volume.
	if err := e.c.Delete(e.ctx(), writer); err != nil {
		t.Fatal(err)
	}
	e.waitGone(writer)
	e.waitFor("dm-crypt mapping lvms-"+id+" closed on "+node, func(context.Context) (bool, string, error) {
		out := e.onAgent(node, "cryptsetup status lvms-"+id+" >/dev/null 2>&1; echo rc=$?; dmsetup ls")
		return strings.Contains(out, "rc=4") && !strings.Contains(out, "lvms-"+id), out, nil
	})

	e.pod(
		"reader",
		"sealed",
		false,
		node,
		`cat /data/f; prev=; while true; do cur=$(df -Pk `+mountPath+` | tail -n +2 | sed 's/^/df: /'); [ "$cur" != "$prev" ] && echo "$cur"; prev=$cur; sleep 1; done`,
	)
	e.waitOutput("reader", "e2e-data")
	e.growClaim("sealed", "2Gi")
	two := resource.MustParse("2Gi")
	e.waitFor("PVC capacity 2Gi and df in the pod above 1.5 GiB", func(ctx context.Context) (bool, string, error) {
		var pvc corev1.PersistentVolumeClaim
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "sealed"}, &pvc); err != nil {
			return false, "", err
		}
		got := pvc.Status.Capacity[corev1.ResourceStorage]
		var reader corev1.Pod
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "reader"}, &reader); err != nil {
			return false, "", err
		}
		kib, _ := demo.LastDFSize(linesEndingWith(e.output(&reader), " "+mountPath))
		return got.Cmp(two) >= 0 && kib > 3<<19, fmt.Sprintf("PVC %s, df %d KiB", got.String(), kib), nil
	})
}

// encryptedStorageClass creates luksClass over the thin device class with the test namespace's
// luksSecret as node-stage and node-expand secret, deleted at the end.
func (e *env) encryptedStorageClass() {
	e.t.Helper()
	sc := &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: luksClass},
		Provisioner: "topolvm.io",
		Parameters: map[string]string{
			"topolvm.io/device-class":                         "thin",
			"csi.storage.k8s.io/fstype":                       "ext4",
			"topolvm.io/encryption":                           "luks2",
			"csi.storage.k8s.io/node-stage-secret-name":       luksSecret,
			"csi.storage.k8s.io/node-stage-secret-namespace":  e.ns,
			"csi.storage.k8s.io/node-expand-secret-name":      luksSecret,
			"csi.storage.k8s.io/node-expand-secret-namespace": e.ns,
		},
		VolumeBindingMode:    new(storagev1.VolumeBindingWaitForFirstConsumer),
		AllowVolumeExpansion: new(true),
	}
	// A class left by an interrupted run names another namespace's secret: replace it.
	if err := e.c.Delete(e.ctx(), sc); err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatalf("delete old StorageClass %s: %v", luksClass, err)
	}
	if err := e.c.Create(e.ctx(), sc); err != nil {
		e.t.Fatalf("create StorageClass %s: %v", luksClass, err)
	}
	e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), sc) })
}

// growClaim raises the claim's storage request to size.
func (e *env) growClaim(name, size string) {
	e.t.Helper()
	var pvc corev1.PersistentVolumeClaim
	if err := e.c.Get(e.ctx(), client.ObjectKey{Namespace: e.ns, Name: name}, &pvc); err != nil {
		e.t.Fatal(err)
	}
	patch := client.MergeFrom(pvc.DeepCopy())
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
	if err := e.c.Patch(e.ctx(), &pvc, patch); err != nil {
		e.t.Fatalf("grow PVC %s to %s: %v", name, size, err)
	}
}

// linesStartingWith returns the first line of out that starts with prefix (after leading blanks).
func linesStartingWith(out, prefix string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), prefix) {
			return line
		}
	}
	return ""
}
