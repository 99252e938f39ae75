package mustgather

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// listPage is how many objects one list request asks for.
const listPage = 500

func listOf(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind + "List"}
}

// Kinds collected (their lists). Secrets are not among them, and never may be.
var (
	nodeList        = listOf("", "v1", "Node")
	pvList          = listOf("", "v1", "PersistentVolume")
	claimList       = listOf("", "v1", "PersistentVolumeClaim")
	eventList       = listOf("", "v1", "Event")
	classList       = listOf("storage.k8s.io", "v1", "StorageClass")
	snapshotGroup   = "snapshot.storage.k8s.io"
	lvmGroup        = lvmv1alpha1.GroupVersion.Group
	topolvmGroup    = topolvmv1.GroupVersion.Group
	namespacedKinds = []struct {
		file string
		gvk  schema.GroupVersionKind
	}{
		{"pods", listOf("", "v1", "Pod")},
		{"deployments", listOf("apps", "v1", "Deployment")},
		{"daemonsets", listOf("apps", "v1", "DaemonSet")},
		{"services", listOf("", "v1", "Service")},
		{"leases", listOf("coordination.k8s.io", "v1", "Lease")},
		{"csistoragecapacities", listOf("storage.k8s.io", "v1", "CSIStorageCapacity")},
		{"events", eventList},
	}
)

// ours are the names of the objects of the driver, to pick the claims and events that concern it.
type ours struct {
	classes, pvs, claims map[string]bool // claims by namespace/name
}

// step is one kind to collect into file: in namespace ns (everywhere when empty), what keep accepts;
// seen, when set, gets the names (namespace/name when namespaced) of what was kept.
type step struct {
	file string
	gvk  schema.GroupVersionKind
	ns   string
	keep func(*unstructured.Unstructured) bool
	seen map[string]bool
}

// objects writes the objects; it returns the names of the cluster's nodes.
func (g *Gatherer) objects(ctx context.Context, a *archive) ([]string, error) {
	all := func(*unstructured.Unstructured) bool { return true }
	o := ours{classes: map[string]bool{}, pvs: map[string]bool{}, claims: map[string]bool{}}
	nodes, err := g.collect(ctx, a, "cluster/nodes.yaml", nodeList, "", all)
	if err != nil {
		return nil, err
	}
	steps := []step{
		{"cluster/storageclasses.yaml", classList, "", field(driver.Name, "provisioner"), o.classes},
		{"cluster/csidrivers.yaml", listOf("storage.k8s.io", "v1", "CSIDriver"), "", named(driver.Name), nil},
		{"cluster/csinodes.yaml", listOf("storage.k8s.io", "v1", "CSINode"), "", all, nil},
		{"cluster/persistentvolumes.yaml", pvList, "", field(driver.Name, "spec", "csi", "driver"), o.pvs},
		{"cluster/persistentvolumeclaims.yaml", claimList, "", o.claim, o.claims},
		{"cluster/volumesnapshotclasses.yaml", listOf(snapshotGroup, "v1", "VolumeSnapshotClass"), "",
			field(driver.Name, "driver"), nil},
		{"cluster/volumesnapshotcontents.yaml", listOf(snapshotGroup, "v1", "VolumeSnapshotContent"), "",
			field(driver.Name, "spec", "driver"), nil},
		{"cluster/validatingwebhookconfigurations.yaml",
			listOf("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"), "", g.callsUs, nil},
		{"cluster/mutatingwebhookconfigurations.yaml",
			listOf("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"), "", g.callsUs, nil},
		{"lvms/lvmclusters.yaml", listOf(lvmGroup, "v1alpha1", "LVMCluster"), g.o.OperatorNamespace, all, nil},
		{"lvms/lvmvolumegroups.yaml", listOf(lvmGroup, "v1alpha1", "LVMVolumeGroup"), g.o.OperatorNamespace, all,
			nil},
		{"lvms/lvmvolumegroupnodestatuses.yaml", listOf(lvmGroup, "v1alpha1", "LVMVolumeGroupNodeStatus"),
			g.o.OperatorNamespace, all, nil},
		{"lvms/logicalvolumes.yaml", listOf(topolvmGroup, "v1", "LogicalVolume"), "", all, nil},
	}
	for _, k := range namespacedKinds {
		file := fmt.Sprintf("namespaces/%s/%s.yaml", g.o.OperatorNamespace, k.file)
		steps = append(steps, step{file, k.gvk, g.o.OperatorNamespace, all, nil})
	}
	for _, s := range steps {
		kept, err := g.collect(ctx, a, s.file, s.gvk, s.ns, s.keep)
		if err != nil {
			return nil, err
		}
		for _, u := range kept {
			if s.seen != nil {
				s.seen[key(&u)] = true
			}
		}
	}
	if _, err := g.collect(ctx, a, "cluster/events.yaml", eventList, "", g.aboutUs(o)); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.GetName())
	}
	return names, nil
}

// collect lists the kind (in namespace ns, or everywhere), keeps what keep accepts and writes it as a
// List to file. A list that fails is recorded as a problem; only a failed write is returned.
func (g *Gatherer) collect(ctx context.Context, a *archive, file string, gvk schema.GroupVersionKind, ns string,
	keep func(*unstructured.Unstructured) bool) ([]unstructured.Unstructured, error) {
	items, err := g.list(ctx, gvk, ns)
	if err != nil {
		a.failed("%s: not collected: list %s: %v", file, gvk.Kind, err)
		return nil, nil
	}
	items = slices.DeleteFunc(items, func(u unstructured.Unstructured) bool { return !keep(&u) })
	slices.SortFunc(items, func(x, y unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(x.GetNamespace(), y.GetNamespace()), cmp.Compare(x.GetName(), y.GetName()))
	})
	out := make([]any, 0, len(items))
	for i := range items {
		u := items[i].DeepCopy()
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		out = append(out, u.Object)
	}
	body, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": out})
	if err != nil {
		a.failed("%s: not collected: encode: %v", file, err)
		return items, nil
	}
	return items, a.add(file, body)
}

// list reads every object of the kind, a page at a time.
func (g *Gatherer) list(ctx context.Context, gvk schema.GroupVersionKind, ns string) ([]unstructured.Unstructured,
	error) {
	var items []unstructured.Unstructured
	cont := ""
	for {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk)
		opts := []client.ListOption{client.Limit(listPage), client.Continue(cont)}
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := g.c.List(ctx, l, opts...); err != nil {
			return nil, err
		}
		items = append(items, l.Items...)
		if cont = l.GetContinue(); cont == "" {
			return items, nil
		}
	}
}

// key is the object's name, prefixed with its namespace when it has one.
func key(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}

// field keeps the objects whose string at path is want.
func field(want string, path ...string) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		v, _, _ := unstructured.NestedString(u.Object, path...)
		return v == want
	}
}

// named keeps the object called name.
func named(name string) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool { return u.GetName() == name }
}

// claim keeps a claim bound to one of the driver's PVs or of one of its storage classes.
func (o ours) claim(u *unstructured.Unstructured) bool {
	pv, _, _ := unstructured.NestedString(u.Object, "spec", "volumeName")
	class, _, _ := unstructured.NestedString(u.Object, "spec", "storageClassName")
	return (pv != "" && o.pvs[pv]) || (class != "" && o.classes[class])
}

// callsUs keeps a webhook configuration with a webhook served from the operator's namespace.
func (g *Gatherer) callsUs(u *unstructured.Unstructured) bool {
	hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	for _, h := range hooks {
		m, ok := h.(map[string]any)
		if !ok {
			continue
		}
		ns, _, _ := unstructured.NestedString(m, "clientConfig", "service", "namespace")
		if ns == g.o.OperatorNamespace {
			return true
		}
	}
	return false
}

// aboutUs keeps, outside the operator's namespace (whose events are collected with it), the events
// about the driver's claims and PVs, about nodes, and about objects of the product's and the snapshot
// APIs.
func (g *Gatherer) aboutUs(o ours) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		if u.GetNamespace() == g.o.OperatorNamespace {
			return false
		}
		obj, _, _ := unstructured.NestedStringMap(u.Object, "involvedObject")
		group := schema.FromAPIVersionAndKind(obj["apiVersion"], obj["kind"]).Group
		switch obj["kind"] {
		case "PersistentVolumeClaim":
			return o.claims[obj["namespace"]+"/"+obj["name"]]
		case "PersistentVolume":
			return o.pvs[obj["name"]]
		case "Node":
			return true
		}
		return group == lvmGroup || group == topolvmGroup || group == snapshotGroup
	}
}
