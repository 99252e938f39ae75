package kubelet

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// harness runs a Kubelet over a fake clientset, a fake CSI node server and a fake runner.
type harness struct {
	client *fake.Clientset
	csi    *fakeNodeServer
	runner *fakeRunner
	root   string
	k      *Kubelet
}

func startKubelet(t *testing.T, csiSrv *fakeNodeServer, runner *fakeRunner, objs ...runtime.Object) *harness {
	t.Helper()
	h := &harness{client: fake.NewClientset(objs...), csi: csiSrv, runner: runner, root: t.TempDir()}
	h.k = New(Config{NodeName: testNode, RootDir: filepath.Join(h.root, "kubelet"), StateDir: filepath.Join(h.root, "state")},
		Deps{Client: h.client, CSI: startCSI(t, csiSrv), Runner: runner})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.k.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return h
}

func (h *harness) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := h.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (h *harness) waitPhase(t *testing.T, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	eventually(t, "pod "+name+" "+string(phase), func() bool {
		p = h.pod(t, name)
		return p.Status.Phase == phase
	})
	return p
}

func (h *harness) waitGone(t *testing.T, name string) {
	t.Helper()
	eventually(t, "pod "+name+" deleted", func() bool {
		_, err := h.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func TestPodWithVolumeRunsAndCompletes(t *testing.T) {
	ephemeral := func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: "scratch", MountPath: "/scratch"})
	}
	blockDev := func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "raw", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "raw", ReadOnly: true}}})
		p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "raw", DevicePath: "/dev/xvda"}}
	}
	tests := []struct {
		name       string
		pod        *corev1.Pod
		pvc        *corev1.PersistentVolumeClaim
		pv         *corev1.PersistentVolume
		stage      bool
		wantTarget string // relative to the pod directory
		wantMount  Mount  // ContainerPath, ReadOnly, File
		wantCap    func(*csi.VolumeCapability) bool
		readonly   bool
	}{
		{
			name: "filesystem claim", pod: testPod("app", withClaim("data", "data", "/data")),
			pvc: boundPVC("default", "data", "pv1"), pv: testPV("pv1", "vol-1"),
			wantTarget: "volumes/kubernetes.io~csi/pv1/mount", wantMount: Mount{ContainerPath: "/data"},
			wantCap: func(c *csi.VolumeCapability) bool {
				return c.GetMount().GetFsType() == "xfs" &&
					c.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
			},
		},
		{
			name: "generic ephemeral volume, staged", pod: testPod("eph", ephemeral), stage: true,
			pvc: boundPVC("default", "eph-scratch", "pv2"), pv: testPV("pv2", "vol-2"),
			wantTarget: "volumes/kubernetes.io~csi/pv2/mount", wantMount: Mount{ContainerPath: "/scratch"},
			wantCap: func(c *csi.VolumeCapability) bool { return c.GetMount() != nil },
		},
		{
			name: "read-only block claim, ReadWriteOncePod", pod: testPod("blk", blockDev), readonly: true,
			pvc: boundPVC("default", "raw", "pv3"), pv: testPV("pv3", "vol-3", blockPV),
			wantTarget: "volumeDevices/kubernetes.io~csi/pv3", wantMount: Mount{ContainerPath: "/dev/xvda", File: true, ReadOnly: true},
			wantCap: func(c *csi.VolumeCapability) bool {
				return c.GetBlock() != nil &&
					c.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runner := newFakeRunner()
			runner.exits <- 0
			h := startKubelet(t, &fakeNodeServer{stage: tt.stage}, runner, tt.pod, tt.pvc, tt.pv)
			p := h.waitPhase(t, tt.pod.Name, corev1.PodSucceeded)

			pub, unpub, _ := h.csi.calls()
			if len(pub) != 1 {
				t.Fatalf("publish calls = %d, want 1", len(pub))
			}
			podDir := filepath.Join(h.k.cfg.RootDir, "pods", string(tt.pod.UID))
			wantTarget := filepath.Join(podDir, tt.wantTarget)
			r := pub[0]
			if r.GetTargetPath() != wantTarget || r.GetVolumeId() != tt.pv.Spec.CSI.VolumeHandle || r.GetReadonly() != tt.readonly {
				t.Errorf("publish = target %s volume %s readonly %v, want %s %s %v", r.GetTargetPath(), r.GetVolumeId(),
					r.GetReadonly(), wantTarget, tt.pv.Spec.CSI.VolumeHandle, tt.readonly)
			}
			if !tt.wantCap(r.GetVolumeCapability()) {
				t.Errorf("capability = %v", r.GetVolumeCapability())
			}
			vc := r.GetVolumeContext()
			if vc[ctxPodName] != tt.pod.Name || vc[ctxPodUID] != string(tt.pod.UID) || vc["topolvm.io/device-class"] != "vg1" {
				t.Errorf("volume context = %v", vc)
			}
			if tt.stage != (r.GetStagingTargetPath() != "") || len(h.csi.stageReqs) != len(pub)*boolInt(tt.stage) {
				t.Errorf("staging path %q, stage calls %d, staging advertised %v", r.GetStagingTargetPath(), len(h.csi.stageReqs), tt.stage)
			}

			specs, visible := h.runner.started()
			if len(specs) != 1 || !visible[0] {
				t.Fatalf("runner started %d processes, volume visible %v", len(specs), visible)
			}
			want := tt.wantMount
			want.HostPath = wantTarget
			if len(specs[0].Mounts) != 1 || specs[0].Mounts[0] != want {
				t.Errorf("mounts = %+v, want %+v", specs[0].Mounts, want)
			}
			if strings.Join(specs[0].Argv, " ") != "sh -c echo hi" {
				t.Errorf("argv = %q", specs[0].Argv)
			}
			cs := p.Status.ContainerStatuses
			if len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 0 {
				t.Errorf("container statuses = %+v", cs)
			}
			// A finished pod's volumes are unpublished, as kubelet unmounts terminated pods.
			eventually(t, "unpublish of the finished pod", func() bool { _, unpub, _ = h.csi.calls(); return len(unpub) == 1 })
			if unpub[0].GetTargetPath() != wantTarget {
				t.Errorf("unpublish target = %s", unpub[0].GetTargetPath())
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestPodPhasesExitCodesAndRestarts(t *testing.T) {
	tests := []struct {
		name         string
		policy       corev1.RestartPolicy
		exits        []int
		wantPhase    corev1.PodPhase
		wantCode     int32
		wantRestarts int32
	}{
		{name: "Never, success", policy: corev1.RestartPolicyNever, exits: []int{0}, wantPhase: corev1.PodSucceeded},
		{name: "Never, failure", policy: corev1.RestartPolicyNever, exits: []int{3}, wantPhase: corev1.PodFailed, wantCode: 3},
		{name: "OnFailure restarts until success", policy: corev1.RestartPolicyOnFailure, exits: []int{1, 0},
			wantPhase: corev1.PodSucceeded, wantRestarts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runner := newFakeRunner()
			runner.output = "line1\nline2\n"
			for _, c := range tt.exits {
				runner.exits <- c
			}
			h := startKubelet(t, &fakeNodeServer{}, runner, testPod("job", withRestart(tt.policy)))
			p := h.waitPhase(t, "job", tt.wantPhase)
			cs := p.Status.ContainerStatuses[0]
			if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != tt.wantCode || cs.RestartCount != tt.wantRestarts {
				t.Errorf("container status = %+v", cs)
			}
			if p.Status.PodIP != loopbackIP {
				t.Errorf("pod IP = %q", p.Status.PodIP)
			}
			if got := p.Annotations[LogTailAnnotation]; got != "line1\nline2" && !strings.HasSuffix(got, "line2") {
				t.Errorf("log tail = %q", got)
			}
		})
	}
}

// A pod created again under the name of a deleted one shows only its own output.
func TestRecreatedPodHasItsOwnLog(t *testing.T) {
	runner := newFakeRunner()
	runner.output = "once\n"
	runner.exits <- 0
	runner.exits <- 0
	h := startKubelet(t, &fakeNodeServer{}, runner, testPod("job"))
	h.waitPhase(t, "job", corev1.PodSucceeded)
	pods := h.client.CoreV1().Pods("default")
	if err := pods.Delete(context.Background(), "job", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitGone(t, "job")
	again := testPod("job")
	again.UID = "uid-job-2"
	if _, err := pods.Create(context.Background(), again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := h.waitPhase(t, "job", corev1.PodSucceeded)
	if got := p.Annotations[LogTailAnnotation]; got != "once" {
		t.Errorf("log tail of the recreated pod = %q, want once", got)
	}
}

func TestRestartAlwaysKeepsRunning(t *testing.T) {
	runner := newFakeRunner()
	runner.exits <- 1
	h := startKubelet(t, &fakeNodeServer{}, runner, testPod("svc", withRestart(corev1.RestartPolicyAlways)))
	eventually(t, "second start", func() bool { s, _ := runner.started(); return len(s) == 2 })
	eventually(t, "running after restart", func() bool {
		p := h.pod(t, "svc")
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == corev1.PodRunning && len(cs) == 1 && cs[0].State.Running != nil && cs[0].RestartCount == 1 &&
			cs[0].LastTerminationState.Terminated != nil && cs[0].LastTerminationState.Terminated.ExitCode == 1
	})
	for _, c := range h.pod(t, "svc").Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
			t.Errorf("Ready = %s", c.Status)
		}
	}
}

func TestDeletionStopsAndUnpublishes(t *testing.T) {
	tests := []struct {
		name string
		// graceful sets a deletion timestamp (the API server's graceful deletion); otherwise the
		// object is removed at once.
		graceful bool
	}{
		{name: "graceful deletion: the kubelet removes the object", graceful: true},
		{name: "object removed at once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			runner := newFakeRunner()
			h := startKubelet(t, &fakeNodeServer{unavailable: 2}, runner,
				testPod("app", withClaim("data", "data", "/data")), boundPVC("default", "data", "pv1"), testPV("pv1", "vol-1"))
			h.waitPhase(t, "app", corev1.PodRunning)
			pods := h.client.CoreV1().Pods("default")
			if tt.graceful {
				p := h.pod(t, "app")
				p.DeletionTimestamp = new(metav1.Now())
				if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			} else if err := pods.Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			h.waitGone(t, "app")
			eventually(t, "unpublish", func() bool { _, unpub, _ := h.csi.calls(); return len(unpub) == 1 })
			pub, unpub, _ := h.csi.calls()
			if unpub[0].GetTargetPath() != pub[0].GetTargetPath() || unpub[0].GetVolumeId() != "vol-1" {
				t.Errorf("unpublish = %v, publish = %v", unpub[0], pub[0])
			}
			eventually(t, "pod directory removed", func() bool {
				_, ok := h.k.volumes.ForClaim("default/data")
				return !ok
			})
		})
	}
}

func TestDaemonSetPodIsOnlyMarkedRunning(t *testing.T) {
	ds := testPod("agent", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "lvms-node",
			UID: "ds", Controller: new(true)}}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar"})
	})
	runner := newFakeRunner()
	h := startKubelet(t, &fakeNodeServer{}, runner, ds)
	p := h.waitPhase(t, "agent", corev1.PodRunning)
	for _, cs := range p.Status.ContainerStatuses {
		if !cs.Ready || cs.State.Running == nil {
			t.Errorf("container %s = %+v, want running and ready", cs.Name, cs)
		}
	}
	if s, _ := runner.started(); len(s) != 0 {
		t.Errorf("runner started %d processes for a DaemonSet pod", len(s))
	}
	if err := h.client.CoreV1().Pods("default").Delete(context.Background(), "agent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestNodeExpansion(t *testing.T) {
	ctx := context.Background()
	runner := newFakeRunner()
	pv := testPV("pv1", "vol-1")
	h := startKubelet(t, &fakeNodeServer{}, runner,
		testPod("app", withClaim("data", "data", "/data")), boundPVC("default", "data", "pv1"), pv)
	h.waitPhase(t, "app", corev1.PodRunning)

	// The resizer grew the LV (PV capacity) and leaves the filesystem to the node.
	pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("2Gi")
	if _, err := h.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	claims := h.client.CoreV1().PersistentVolumeClaims("default")
	pvc, err := claims.Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	pvc.Status.Conditions = []corev1.PersistentVolumeClaimCondition{
		{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}
	pvc.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
		corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending}
	if _, err := claims.UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "claim resize finished", func() bool {
		pvc, err := claims.Get(ctx, "data", metav1.GetOptions{})
		return err == nil && !needsNodeExpansion(pvc) && pvc.Status.Capacity.Storage().Cmp(resource.MustParse("2Gi")) == 0
	})
	pub, _, exp := h.csi.calls()
	if len(exp) != 1 || exp[0].GetVolumePath() != pub[0].GetTargetPath() || exp[0].GetCapacityRange().GetRequiredBytes() != 2<<30 ||
		exp[0].GetVolumeId() != "vol-1" {
		t.Errorf("expand calls = %v", exp)
	}
}
