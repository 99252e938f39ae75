package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// peerManifests decodes the documents of dev/bench/topolvm/<name> (make bench-peer's), strictly:
// a misspelt field fails. Kinds client-go does not know (VolumeSnapshotClass) are skipped.
func peerManifests(t *testing.T, name string) []runtime.Object {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "topolvm", name))
	if err != nil {
		t.Fatal(err)
	}
	// dev/bench/topolvm.sh puts TOPOLVM_PROVISIONER_ARGS after csi-provisioner's last argument.
	if name == "topolvm.yaml" && strings.Count(string(b), "--capacity-ownerref-level=2]") != 1 {
		t.Errorf("%s: csi-provisioner's arguments must end with the one \"--capacity-ownerref-level=2]\"", name)
	}
	text := strings.ReplaceAll(string(b), "TOPOLVM_VERSION", "v0.41.0")
	text = strings.ReplaceAll(text, "--capacity-ownerref-level=2]", "--capacity-ownerref-level=2, --timeout=2m]")
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	var objs []runtime.Object
	for doc := range strings.SplitSeq(text, "\n---\n") {
		if strings.Contains(doc, "kind: VolumeSnapshotClass") {
			continue
		}
		obj, _, err := dec.Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, doc)
		}
		objs = append(objs, obj)
	}
	return objs
}

// lvmdDeviceClass is the part of a TopoLVM lvmd device class the peer sets.
type lvmdDeviceClass struct {
	Name        string `json:"name"`
	VolumeGroup string `json:"volume-group"`
	Default     bool   `json:"default"`
	SpareGB     *int   `json:"spare-gb"`
	Type        string `json:"type"`
	ThinPool    *struct {
		Name               string  `json:"name"`
		OverprovisionRatio float64 `json:"overprovision-ratio"`
	} `json:"thin-pool"`
}

// TestPeerManifests checks that the peer's manifests decode, and that they agree with each other and
// with what dev/bench/topolvm.sh passes bench-cluster: the node shell's label is --node-shell's
// selector, its script creates the VGs and pool lvmd's device classes name, and the StorageClasses
// are lvms' names and file systems on those device classes.
func TestPeerManifests(t *testing.T) {
	var shell *appsv1.DaemonSet
	for _, obj := range peerManifests(t, "node-shell.yaml") {
		if ds, ok := obj.(*appsv1.DaemonSet); ok {
			shell = ds
		}
	}
	if shell == nil || shell.Namespace != "topolvm-system" ||
		shell.Spec.Template.Labels["app.kubernetes.io/name"] != "peer-node-shell" || !shell.Spec.Template.Spec.HostPID {
		t.Fatalf("node-shell.yaml: want a hostPID DaemonSet in topolvm-system labelled peer-node-shell, got %+v", shell)
	}
	script := strings.Join(shell.Spec.Template.Spec.Containers[0].Args, "\n")
	for _, want := range []string{"vgcreate thin /dev/ubda", "-n thin-pool-1 -l 90%FREE", "vgcreate thick /dev/ubdb"} {
		if !strings.Contains(script, want) {
			t.Errorf("the node shell's script lacks %q", want)
		}
	}
	classes := map[string]lvmdDeviceClass{}
	params := map[string]map[string]string{}
	for _, obj := range peerManifests(t, "topolvm.yaml") {
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			var conf struct {
				SocketName    string            `json:"socket-name"`
				DeviceClasses []lvmdDeviceClass `json:"device-classes"`
			}
			if err := yaml.UnmarshalStrict([]byte(o.Data["lvmd.yaml"]), &conf, yaml.DisallowUnknownFields); err != nil {
				t.Fatalf("lvmd.yaml: %v", err)
			}
			if conf.SocketName != "/run/topolvm/lvmd.sock" {
				t.Errorf("lvmd's socket %q, want topolvm-node's --lvmd-socket", conf.SocketName)
			}
			for _, dc := range conf.DeviceClasses {
				classes[dc.Name] = dc
			}
		case *appsv1.Deployment:
			for _, c := range o.Spec.Template.Spec.Containers {
				if c.Name == "csi-provisioner" && (!slices.Contains(c.Command, "--enable-capacity") ||
					!slices.Contains(c.Command, "--timeout=2m")) {
					t.Errorf("csi-provisioner's command %q: want --enable-capacity and the extra argument", c.Command)
				}
			}
		case *storagev1.StorageClass:
			if o.Provisioner != "topolvm.io" || o.VolumeBindingMode == nil ||
				*o.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
				t.Errorf("StorageClass %s: want topolvm.io, WaitForFirstConsumer", o.Name)
			}
			params[o.Name] = o.Parameters
		}
	}
	thin, thick := classes["thin"], classes["thick"]
	thinOK := thin.Default && thin.VolumeGroup == "thin" && thin.Type == "thin" && thin.ThinPool != nil &&
		thin.ThinPool.Name == "thin-pool-1" && thin.ThinPool.OverprovisionRatio == 10
	if !thinOK || thick.VolumeGroup != "thick" || thick.Type != "" {
		t.Errorf("lvmd device classes %+v: want thin (VG thin, pool thin-pool-1, ratio 10), thick (VG thick)", classes)
	}
	for _, dc := range []lvmdDeviceClass{thin, thick} {
		if dc.SpareGB == nil || *dc.SpareGB != 0 {
			t.Errorf("device class %s: want spare-gb 0 (TopoLVM's default of 10 GiB exceeds the disks)", dc.Name)
		}
	}
	for sc, want := range map[string][2]string{"lvms-thin": {"thin", "xfs"}, "lvms-thick": {"thick", "ext4"}} {
		got := [2]string{params[sc]["topolvm.io/device-class"], params[sc]["csi.storage.k8s.io/fstype"]}
		if got != want {
			t.Errorf("StorageClass %s: device class and fstype %v, want lvmcluster.yaml's %v", sc, got, want)
		}
	}
	if names := slices.Sorted(maps.Keys(params)); !slices.Equal(names, []string{"lvms-thick", "lvms-thin"}) {
		t.Errorf("StorageClasses %v, want lvms-thick and lvms-thin", names)
	}
}
