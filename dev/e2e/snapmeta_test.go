//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// listerImage runs snapshot-metadata-lister, the example backup client of external-snapshot-metadata
// (its entrypoint), imported into every node.
const listerImage = "lvms.local/snapshot-metadata-lister:v0.2.0"

// mib is one MiB.
const mib = int64(1) << 20

// testSnapshotMetadata is changed block tracking end to end: a thin block volume gets writes at known
// offsets, snapshot 1, more writes, snapshot 2; the upstream lister, in a pod with a service
// account allowed to read snapshots, lists the allocated ranges of snapshot 1 and the ranges changed
// from 1 to 2 through the external-snapshot-metadata sidecar (token authentication, TLS with the
// CA of the SnapshotMetadataService), `lvms snapshot-metadata` and the node agent's endpoint (mutual
// TLS). Writes are whole MiB at MiB offsets, so they are exact for any pool chunk size up to 1 MiB.
func testSnapshotMetadata(t *testing.T) {
	fullSetOnly(t, "the snapshot metadata service's allocated and changed blocks through its sidecar "+
		"(9 to 10 min there)")
	e := newEnv(t)
	// The dev cluster has no pod network between nodes: the sidecar reaches the node agent of the
	// snapshot's node only on its own node, so the volume is made there.
	node := e.snapshotMetadataPod().Spec.NodeName
	e.claim("vol", thinClass, "1Gi", true, "")
	first := [][2]int64{{0, 1}, {8, 2}, {100, 1}}    // MiB offset, MiB count
	second := [][2]int64{{8, 1}, {50, 1}, {1023, 1}} // a rewrite, a new range, the last MiB
	e.pod("write-1", "vol", true, node, writeMiBs(first))
	e.finished("write-1")
	e.snapshot("snap-1", thinClass, "vol")
	e.pod("write-2", "vol", true, node, writeMiBs(second))
	e.finished("write-2")
	e.snapshot("snap-2", thinClass, "vol")

	e.backupAccount("backup")
	allocated := e.listBlocks("list-allocated", "-s", "snap-1")
	if want := ranges(first); !slices.Equal(allocated, want) {
		t.Errorf("allocated ranges of snap-1: %v, want %v", allocated, want)
	}
	changed := e.listBlocks("list-changed", "-s", "snap-2", "-p", "snap-1")
	if want := ranges(second); !slices.Equal(changed, want) {
		t.Errorf("ranges changed from snap-1 to snap-2: %v, want %v", changed, want)
	}
	t.Logf("allocated ranges of snap-1: %v; changed from snap-1 to snap-2: %v", allocated, changed)
}

// writeMiBs is a script writing random MiBs at MiB offsets of the block device /dev/xvda.
func writeMiBs(at [][2]int64) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, w := range at {
		fmt.Fprintf(&b, "dd if=/dev/urandom of=/dev/xvda bs=1048576 seek=%d count=%d conv=notrunc,fsync 2>/dev/null\n",
			w[0], w[1])
	}
	b.WriteString("echo written\n")
	return b.String()
}

// ranges renders MiB ranges as the lister prints them: "offset+size" in bytes.
func ranges(at [][2]int64) []string {
	var out []string
	for _, w := range at {
		out = append(out, fmt.Sprintf("%d+%d", w[0]*mib, w[1]*mib))
	}
	return out
}

// backupAccount creates service account name with what a backup client needs (the upstream client
// role: read snapshots and the SnapshotMetadataService, create tokens), bound for this test only.
func (e *env) backupAccount(name string) {
	e.t.Helper()
	e.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}})
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name},
		Rules: []rbacv1.PolicyRule{
			{
				APIGroups: []string{"snapshot.storage.k8s.io"},
				Resources: []string{"volumesnapshots", "volumesnapshotcontents"},
				Verbs:     []string{"get", "list", "watch"},
			},
			{APIGroups: []string{"cbt.storage.k8s.io"}, Resources: []string{"snapshotmetadataservices"},
				Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create", "get"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: e.ns}},
	}
	if err := e.c.Create(e.ctx(), role); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), role) })
	if err := e.c.Create(e.ctx(), binding); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), binding) })
}

// listBlocks runs the lister with args in a pod as service account backup and returns the ranges of
// its table ("offset+size" in bytes, in order).
func (e *env) listBlocks(pod string, args ...string) []string {
	e.t.Helper()
	// The dev cluster has neither cluster DNS nor Service IPs inside pods, nor a pod network between
	// nodes: the pod runs on the sidecar's node and resolves the SnapshotMetadataService's address
	// through /etc/hosts to the sidecar's pod, which serves the Service's port itself.
	sidecar := e.snapshotMetadataPod()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod},
		Spec: corev1.PodSpec{
			RestartPolicy:      corev1.RestartPolicyNever,
			ServiceAccountName: "backup",
			NodeSelector:       map[string]string{corev1.LabelHostname: sidecar.Spec.NodeName},
			HostAliases: []corev1.HostAlias{
				{IP: sidecar.Status.PodIP, Hostnames: []string{"lvms-snapshot-metadata." + operatorNS}},
			},
			TerminationGracePeriodSeconds: new(int64(2)),
			Containers: []corev1.Container{{Name: "main", Image: listerImage, ImagePullPolicy: corev1.PullNever,
				Args: append([]string{"-n", e.ns}, args...)}},
		},
	}
	e.create(p)
	_, out := e.finished(pod)
	var got []string
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 5 || f[2] != "VARIABLE_LENGTH" {
			continue
		}
		off, err1 := strconv.ParseInt(f[3], 10, 64)
		size, err2 := strconv.ParseInt(f[4], 10, 64)
		if err1 != nil || err2 != nil {
			e.t.Fatalf("lister row %q", line)
		}
		got = append(got, fmt.Sprintf("%d+%d", off, size))
	}
	e.t.Logf("%s: %s", pod, strings.TrimSpace(out))
	return got
}

// snapshotMetadataPod waits for the running pod of the lvms-snapshot-metadata Deployment (the
// external-snapshot-metadata sidecar) and returns it.
func (e *env) snapshotMetadataPod() *corev1.Pod {
	e.t.Helper()
	var pods corev1.PodList
	e.waitFor("the lvms-snapshot-metadata pod running", func(ctx context.Context) (bool, string, error) {
		if err := e.c.List(ctx, &pods, client.InNamespace(operatorNS),
			client.MatchingLabels{"app.kubernetes.io/name": "lvms-snapshot-metadata"}); err != nil {
			return false, "", err
		}
		ok := len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodRunning &&
			pods.Items[0].Status.PodIP != "" && pods.Items[0].Spec.NodeName != ""
		return ok, fmt.Sprintf("%d pods", len(pods.Items)), nil
	})
	return &pods.Items[0]
}
