//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// testCrossNodeCapacity: a restore that does not fit on its snapshot's node any more (a filler claim
// took that node's thick space) is placed by the scheduler, through the nodes' CSIStorageCapacity, on
// the other node, its pod unpinned, and copied there with the snapshot's data.
func testCrossNodeCapacity(e *env) {
	t := e.t
	e.claim("c-src", thickClass, "32Mi", true, "")
	e.pod("c-writer", "c-src", true, "", blockWrite)
	writer, out := e.finished("c-writer")
	want, source := sumOf(t, out), writer.Spec.NodeName
	e.snapshot("c-snap", thickClass, "c-src")

	n := &corev1.Node{}
	if err := e.c.Get(e.ctx(), client.ObjectKey{Name: source}, n); err != nil {
		t.Fatal(err)
	}
	free, err := strconv.ParseInt(n.Annotations[capacityAnnotationThick], 10, 64)
	if err != nil {
		t.Fatalf("node %s: %s %q: %v", source, capacityAnnotationThick, n.Annotations[capacityAnnotationThick], err)
	}
	// Leave less than the restore needs (32 MiB, as the snapshot) on the snapshot's node.
	filler := (free - 16<<20) &^ (4<<20 - 1)
	e.claim("c-filler", thickClass, resource.NewQuantity(filler, resource.BinarySI).String(), true, "")
	e.pod("c-fill", "c-filler", true, source, "true")
	e.finished("c-fill")
	defer func() {
		ctx := context.Background()
		_ = e.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "c-fill"}})
		_ = e.c.Delete(
			ctx,
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "c-filler"}},
		)
	}()
	e.waitFor("the snapshot's node published less thick capacity than the restore needs",
		func(ctx context.Context) (bool, string, error) {
			c, err := e.storageCapacity(ctx, thickClass, source)
			return err == nil && c >= 0 && c < 32<<20, fmt.Sprintf("capacity %d", c), err
		})

	e.claim("c-restored", thickClass, "32Mi", true, "c-snap")
	e.pod("c-reader", "c-restored", true, "", blockSum)
	reader, out := e.finished("c-reader")
	if got := sumOf(t, out); got != want || reader.Spec.NodeName == source {
		t.Fatalf("restore read sum %s on %s; the snapshot's is %s on %s, which has no room", got,
			reader.Spec.NodeName, want, source)
	}
	_, lv := e.volumeOf("c-restored")
	if lv.Spec.SourceNode != source || lv.Spec.NodeName != reader.Spec.NodeName {
		t.Fatalf("LogicalVolume %s on %s from %q", lv.Name, lv.Spec.NodeName, lv.Spec.SourceNode)
	}
	t.Logf("the scheduler sent the restore's pod to %s (%d bytes free on %s); %d bytes copied", reader.Spec.NodeName,
		free-filler, source, lv.Status.Transfer.CopiedBytes)
}

// storageCapacity is the capacity the CSIStorageCapacity of class on node publishes, -1 for none.
func (e *env) storageCapacity(ctx context.Context, class, node string) (int64, error) {
	var list storagev1.CSIStorageCapacityList
	if err := e.c.List(ctx, &list); err != nil {
		return -1, err
	}
	for _, c := range list.Items {
		if c.StorageClassName == class && c.NodeTopology != nil &&
			c.NodeTopology.MatchLabels["topology.topolvm.io/node"] == node && c.Capacity != nil {
			return c.Capacity.Value(), nil
		}
	}
	return -1, nil
}
