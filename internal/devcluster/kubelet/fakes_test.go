package kubelet

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
)

const testNode = "node1"

// fakeNodeServer is an in-memory CSI node service: publish creates the target with a marker file.
type fakeNodeServer struct {
	csi.UnimplementedNodeServer
	stage bool

	mu sync.Mutex
	// unavailable is how many publish calls fail with Unavailable first (an agent restarting).
	unavailable int
	publish     []*csi.NodePublishVolumeRequest
	unpublish   []*csi.NodeUnpublishVolumeRequest
	stageReqs   []*csi.NodeStageVolumeRequest
	unstage     []*csi.NodeUnstageVolumeRequest
	expand      []*csi.NodeExpandVolumeRequest
}

const markerFile = "published-volume"

func (f *fakeNodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: testNode,
		AccessibleTopology: &csi.Topology{Segments: map[string]string{lvmcsi.TopologyNodeKey: testNode}}}, nil
}

func (f *fakeNodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	caps := []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_EXPAND_VOLUME}
	if f.stage {
		caps = append(caps, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	}
	out := &csi.NodeGetCapabilitiesResponse{}
	for _, c := range caps {
		out.Capabilities = append(out.Capabilities, &csi.NodeServiceCapability{
			Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: c}}})
	}
	return out, nil
}

func (f *fakeNodeServer) NodeStageVolume(_ context.Context, r *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stageReqs = append(f.stageReqs, r)
	return &csi.NodeStageVolumeResponse{}, nil
}

func (f *fakeNodeServer) NodeUnstageVolume(_ context.Context, r *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unstage = append(f.unstage, r)
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (f *fakeNodeServer) NodePublishVolume(_ context.Context, r *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unavailable > 0 {
		f.unavailable--
		return nil, status.Error(codes.Unavailable, "agent restarting")
	}
	f.publish = append(f.publish, r)
	if r.GetVolumeCapability().GetBlock() != nil {
		if err := os.WriteFile(r.GetTargetPath(), []byte(r.GetVolumeId()), 0o600); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := os.MkdirAll(r.GetTargetPath(), 0o750); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.WriteFile(filepath.Join(r.GetTargetPath(), markerFile), []byte(r.GetVolumeId()), 0o600); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (f *fakeNodeServer) NodeUnpublishVolume(_ context.Context, r *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unpublish = append(f.unpublish, r)
	return &csi.NodeUnpublishVolumeResponse{}, os.RemoveAll(r.GetTargetPath())
}

func (f *fakeNodeServer) NodeExpandVolume(_ context.Context, r *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expand = append(f.expand, r)
	return &csi.NodeExpandVolumeResponse{CapacityBytes: r.GetCapacityRange().GetRequiredBytes()}, nil
}

// calls returns a consistent copy of the recorded calls.
func (f *fakeNodeServer) calls() (pub []*csi.NodePublishVolumeRequest, unpub []*csi.NodeUnpublishVolumeRequest, exp []*csi.NodeExpandVolumeRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append(pub, f.publish...), append(unpub, f.unpublish...), append(exp, f.expand...)
}

// startCSI serves srv on a temporary unix socket and returns a client over it.
func startCSI(t *testing.T, srv *fakeNodeServer) csi.NodeClient {
	t.Helper()
	dir, err := os.MkdirTemp("", "dk")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "csi.sock")
	gs := grpc.NewServer()
	csi.RegisterNodeServer(gs, srv)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	conn, err := DialCSI(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		gs.Stop()
		_ = os.RemoveAll(dir)
	})
	return csi.NewNodeClient(conn)
}

// fakeRunner records process specs; each process exits with the next code sent on exits, or 137
// when stopped. It also records whether every volume's marker was visible at start.
type fakeRunner struct {
	exits chan int
	// output is written to the process output at start.
	output string

	mu      sync.Mutex
	specs   []ProcessSpec
	visible []bool
}

func newFakeRunner() *fakeRunner { return &fakeRunner{exits: make(chan int, 10)} }

func (r *fakeRunner) Start(ctx context.Context, spec ProcessSpec) (Process, error) {
	seen := true
	for _, m := range spec.Mounts {
		p := filepath.Join(m.HostPath, markerFile)
		if m.File {
			p = m.HostPath
		}
		if _, err := os.Stat(p); err != nil {
			seen = false
		}
	}
	if r.output != "" {
		if _, err := fmt.Fprint(spec.Output, r.output); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	r.specs = append(r.specs, spec)
	r.visible = append(r.visible, seen)
	r.mu.Unlock()
	return fakeProcess{ctx: ctx, exits: r.exits}, nil
}

func (r *fakeRunner) started() ([]ProcessSpec, []bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ProcessSpec{}, r.specs...), append([]bool{}, r.visible...)
}

type fakeProcess struct {
	ctx   context.Context //nolint:containedctx // the process lifetime
	exits chan int
}

func (p fakeProcess) Wait() (int, error) {
	select {
	case c := <-p.exits:
		return c, nil
	case <-p.ctx.Done():
		return 137, nil
	}
}

// eventually polls cond every 20 ms for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Object builders.

type pvOpt func(*corev1.PersistentVolume)

func testPV(name, handle string, opts ...pvOpt) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: lvmcsi.DriverName, VolumeHandle: handle, FSType: "xfs",
			VolumeAttributes: map[string]string{"topolvm.io/device-class": "vg1"}}},
	}}
	for _, o := range opts {
		o(pv)
	}
	return pv
}

func blockPV(pv *corev1.PersistentVolume) {
	pv.Spec.VolumeMode = new(corev1.PersistentVolumeBlock)
	pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
}

func boundPVC(ns, name, pv string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:   corev1.PersistentVolumeClaimSpec{VolumeName: pv},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
}

type podOpt func(*corev1.Pod)

func testPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: testNode, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "busybox",
				Command: []string{"sh", "-c"}, Args: []string{"echo hi"}}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withClaim(volume, claim, mountPath string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: volume, MountPath: mountPath})
	}
}

func withRestart(policy corev1.RestartPolicy) podOpt {
	return func(p *corev1.Pod) { p.Spec.RestartPolicy = policy }
}
