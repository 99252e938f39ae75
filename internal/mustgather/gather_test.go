package mustgather

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/internal/driver"
)

const (
	ns         = "lvms-system"
	secretText = "s3cr3t-key-material"
)

func world() []client.Object {
	meta := func(namespace, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: namespace, Name: name}
	}
	event := func(namespace, name, kind, objNS, objName string) *corev1.Event {
		return &corev1.Event{ObjectMeta: meta(namespace, name), Reason: "Test", Message: name,
			InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: objNS, Name: objName}}
	}
	agent := &corev1.Pod{ObjectMeta: meta(ns, "lvms-node-a"),
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "node"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "node", RestartCount: 1}}}}
	agent.Labels = map[string]string{"app.kubernetes.io/name": "lvms-node"}
	return []client.Object{
		&corev1.Node{ObjectMeta: meta("", "node-a")},
		&corev1.Node{ObjectMeta: meta("", "node-b")},
		&storagev1.StorageClass{ObjectMeta: meta("", "lvms-thin"), Provisioner: driver.Name},
		&storagev1.StorageClass{ObjectMeta: meta("", "other-sc"), Provisioner: "other.example.com"},
		&corev1.PersistentVolume{ObjectMeta: meta("", "pv-1"), Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: driver.Name, VolumeHandle: "lv-1"}}}},
		&corev1.PersistentVolume{ObjectMeta: meta("", "pv-nfs"), Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "nfs.example.com", VolumeHandle: "x"}}}},
		&corev1.PersistentVolumeClaim{ObjectMeta: meta("app", "data"),
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: meta("app", "pending"),
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: new("lvms-thin")}},
		&corev1.PersistentVolumeClaim{ObjectMeta: meta("app", "elsewhere"),
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: new("other-sc")}},
		event("app", "about-data", "PersistentVolumeClaim", "app", "data"),
		event("app", "about-elsewhere", "PersistentVolumeClaim", "app", "elsewhere"),
		event("default", "about-node", "Node", "", "node-a"),
		event(ns, "in-our-namespace", "Pod", ns, "lvms-node-a"),
		&lvmv1alpha1.LVMCluster{ObjectMeta: meta(ns, "my-lvmcluster")},
		&topolvmv1.LogicalVolume{ObjectMeta: meta("", "pv-1")},
		agent,
		&corev1.Secret{ObjectMeta: meta(ns, "lvms-webhook-cert"),
			Data: map[string][]byte{"tls.key": []byte(secretText)}},
		&corev1.Secret{ObjectMeta: meta("app", "db"), StringData: map[string]string{"password": secretText}},
	}
}

// noSecrets fails the test on any read of a Secret.
func noSecrets(t *testing.T) interceptor.Funcs {
	isSecret := func(obj runtime.Object) bool {
		switch o := obj.(type) {
		case *corev1.Secret, *corev1.SecretList:
			return true
		case *unstructured.Unstructured:
			return o.GetKind() == "Secret"
		case *unstructured.UnstructuredList:
			return o.GetKind() == "SecretList"
		}
		return false
	}
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object,
			opts ...client.GetOption) error {
			if isSecret(obj) {
				t.Errorf("must-gather read Secret %s", key)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if isSecret(list) {
				t.Errorf("must-gather listed Secrets")
			}
			return c.List(ctx, list, opts...)
		},
	}
}

// fakeExec plays the node agent's container: each command prints "output of ARGS"; lvmdevices fails.
func fakeExec(ran *[]string) Exec {
	return func(_ context.Context, pod *corev1.Pod, container string, command []string, stdout, stderr io.Writer) error {
		args := command[len(hostCommand(nil)):]
		*ran = append(*ran, pod.Spec.NodeName+"/"+container+": "+strings.Join(args, " "))
		if args[0] == "lvmdevices" {
			_, _ = io.WriteString(stderr, "Devices file not found.")
			return errors.New("command terminated with exit code 5")
		}
		_, _ = io.WriteString(stdout, "output of "+strings.Join(args, " "))
		return nil
	}
}

func gather(t *testing.T) (map[string]string, *Summary, []string) {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, lvmv1alpha1.AddToScheme, topolvmv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	c := crfake.NewClientBuilder().WithScheme(s).WithObjects(world()...).WithInterceptorFuncs(noSecrets(t)).Build()
	var ran []string
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	opts := Options{OperatorNamespace: ns, Now: func() time.Time { return now }}
	g := New(c, fake.NewClientset(), fakeExec(&ran), opts)
	var buf bytes.Buffer
	sum, err := g.Run(t.Context(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	gz, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if !hdr.ModTime.Equal(now) {
			t.Errorf("%s: time %s, want %s", hdr.Name, hdr.ModTime, now)
		}
		files[strings.TrimPrefix(hdr.Name, Root+"/")] = string(body)
	}
	if len(files) != sum.Files {
		t.Errorf("tarball has %d files, summary says %d", len(files), sum.Files)
	}
	return files, sum, ran
}

// TestGather: the tarball holds the driver's objects (and not other drivers'), the events about them,
// the product's logs, every node's host state from its agent, and errors.txt with what was missed.
func TestGather(t *testing.T) {
	files, sum, ran := gather(t)
	for _, tc := range []struct {
		file      string
		want, not []string
	}{
		{"cluster/storageclasses.yaml", []string{"lvms-thin"}, []string{"other-sc"}},
		{"cluster/persistentvolumes.yaml", []string{"pv-1"}, []string{"pv-nfs"}},
		{"cluster/persistentvolumeclaims.yaml", []string{"name: data", "name: pending"}, []string{"elsewhere"}},
		{"cluster/events.yaml", []string{"about-data", "about-node"}, []string{"about-elsewhere", "in-our-namespace"}},
		{"namespaces/lvms-system/events.yaml", []string{"in-our-namespace"}, nil},
		{"namespaces/lvms-system/pods.yaml", []string{"lvms-node-a"}, nil},
		{"lvms/lvmclusters.yaml", []string{"my-lvmcluster"}, nil},
		{"lvms/logicalvolumes.yaml", []string{"pv-1"}, nil},
		{"cluster/nodes.yaml", []string{"node-a", "node-b"}, nil},
		{"logs/lvms-node-a/node.log", []string{"fake logs"}, nil},
		{"logs/lvms-node-a/node.previous.log", []string{"fake logs"}, nil},
		{"nodes/node-a/lvs.json", []string{"output of lvs -a --reportformat json"}, nil},
		{"nodes/node-a/lsblk.json", []string{"output of lsblk --json"}, nil},
		{"nodes/node-a/commands.txt", []string{"$ lvmdevices\nfailed", "$ vgs", "container node"}, nil},
		{"errors.txt", []string{
			"nodes/node-a/lvmdevices.txt: lvmdevices: command terminated with exit code 5: Devices file not found.",
			"nodes/node-b: not collected: no running node agent pod",
		}, nil},
	} {
		body, ok := files[tc.file]
		if !ok {
			t.Errorf("no %s in the tarball", tc.file)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q:\n%s", tc.file, w, body)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(body, n) {
				t.Errorf("%s has %q:\n%s", tc.file, n, body)
			}
		}
	}
	if strings.Contains(files["cluster/nodes.yaml"], "managedFields") {
		t.Error("managedFields are kept")
	}
	if _, ok := files["nodes/node-a/lvmdevices.txt"]; ok {
		t.Error("a failed command without output left a file")
	}
	if !slices.Equal(sum.Nodes, []string{"node-a"}) || len(sum.Problems) == 0 {
		t.Errorf("summary: nodes %v, problems %v", sum.Nodes, sum.Problems)
	}
	if len(ran) != len(NodeCommands) {
		t.Errorf("ran %d commands, want %d: %v", len(ran), len(NodeCommands), ran)
	}
	for _, r := range ran {
		if !strings.HasPrefix(r, "node-a/node: ") || strings.Contains(r, "dmsetup table") {
			t.Errorf("ran %q", r)
		}
	}
}

// TestNoSecretInTheTarball: no Secret is read (noSecrets fails the test on any read), and no file holds
// a Secret's content, plain or base64-encoded.
func TestNoSecretInTheTarball(t *testing.T) {
	files, _, _ := gather(t)
	encoded := base64.StdEncoding.EncodeToString([]byte(secretText))
	for name, body := range files {
		if strings.Contains(body, secretText) || strings.Contains(body, encoded) {
			t.Errorf("%s holds a Secret's content", name)
		}
		if strings.Contains(body, "kind: Secret") {
			t.Errorf("%s holds a Secret", name)
		}
	}
}

// TestHostCommand: every node command runs in the host's mount namespace in the C locale.
func TestHostCommand(t *testing.T) {
	got := strings.Join(hostCommand([]string{"lvs"}), " ")
	want := "nsenter --target=1 --mount -- env LC_ALL=C PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin lvs"
	if got != want {
		t.Errorf("hostCommand = %q, want %q", got, want)
	}
}

// TestNodeThatDoesNotAnswer: after a command times out on a node, the node's other commands are not
// run (each would wait as long), and errors.txt says so.
func TestNodeThatDoesNotAnswer(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	agent := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lvms-node-a",
		Labels: map[string]string{"app.kubernetes.io/name": "lvms-node"}},
		Spec:   corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "node"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	c := crfake.NewClientBuilder().WithScheme(s).
		WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, agent).Build()
	calls := 0
	hang := func(ctx context.Context, _ *corev1.Pod, _ string, _ []string, _, _ io.Writer) error {
		calls++
		<-ctx.Done()
		return ctx.Err()
	}
	g := New(c, fake.NewClientset(), hang, Options{OperatorNamespace: ns, CommandTimeout: 10 * time.Millisecond})
	sum, err := g.Run(t.Context(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("%d commands run on a node that does not answer, want 1", calls)
	}
	want := fmt.Sprintf("nodes/node-a: %d commands not run after lvm timed out", len(NodeCommands)-1)
	if !slices.ContainsFunc(sum.Problems, func(p string) bool { return strings.HasPrefix(p, want) }) {
		t.Errorf("problems %q lack %q", sum.Problems, want)
	}
}
