package main

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
)

const (
	popNS     = "test-pop"
	userNS    = "test"
	testImage = "registry.k8s.io/sig-storage/hello-populator:v1.0.1"
	testNode  = "node-1"
	wffc      = "lvms-thin"
	immediate = "lvms-immediate"
	claimUID  = types.UID("3f1c")
	primeUID  = types.UID("9a7e")
	pvName    = "pvc-9a7e"
)

var key = claimKey{namespace: userNS, name: "claim", uid: claimUID}

// claim is the suite's claim: a Hello as data source, a WaitForFirstConsumer class, its node chosen.
func claim(opts ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	group, class, mode := helloGroup, wffc, corev1.PersistentVolumeFilesystem
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: "claim", Namespace: userNS, UID: claimUID, ResourceVersion: "7",
			Annotations: map[string]string{annSelectedNode: testNode},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			},
			StorageClassName: &class,
			VolumeMode:       &mode,
			DataSourceRef:    &corev1.TypedObjectReference{APIGroup: &group, Kind: helloKind, Name: "example-hello"},
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func noNode(c *corev1.PersistentVolumeClaim) { delete(c.Annotations, annSelectedNode) }
func boundTo(pv string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = pv }
}

func classes() []runtime.Object {
	late, now := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	return []runtime.Object{
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: wffc}, VolumeBindingMode: &late},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: immediate}, VolumeBindingMode: &now},
	}
}

func hello() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hello.example.com/v1alpha1", "kind": helloKind,
		"metadata": map[string]any{"name": "example-hello", "namespace": userNS},
		"spec":     map[string]any{"fileName": "example-test.txt", "fileContents": "Hello from namespace test"},
	}}
}

// prime is the prime claim as the provisioner leaves it: bound to pvName.
func prime() *corev1.PersistentVolumeClaim {
	p := claim()
	p.Name, p.Namespace, p.UID, p.Annotations = primeName(claimUID), popNS, primeUID, owner(claim())
	p.Spec.DataSourceRef = nil
	p.Spec.VolumeName = pvName
	return p
}

func pod(phase corev1.PodPhase) *corev1.Pod {
	p := (&populator{namespace: popNS, image: testImage}).populatePod(claim(), helloSpec{"f", "c"}, testNode)
	p.Status.Phase = phase
	return p
}

// pv is the prime claim's PV, its claimRef naming the claim of uid.
func pv(uid types.UID) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{
			Kind: "PersistentVolumeClaim", Namespace: popNS, Name: primeName(claimUID), UID: uid,
		}},
	}
}

func newPopulator(kube []runtime.Object, dyn ...runtime.Object) *populator {
	return &populator{
		kube: fake.NewClientset(kube...), dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), dyn...),
		namespace: popNS, image: testImage,
	}
}

// state is what exists of the populator's objects after a sync.
type state struct {
	prime, pod bool
	podPhase   corev1.PodPhase
	// pvClaim is the UID the PV's claimRef names ("" without a PV).
	pvClaim types.UID
}

func observe(t *testing.T, p *populator) state {
	t.Helper()
	ctx := context.Background()
	var s state
	_, err := p.kube.CoreV1().PersistentVolumeClaims(popNS).Get(ctx, primeName(claimUID), metav1.GetOptions{})
	s.prime = exists(t, err)
	pd, err := p.kube.CoreV1().Pods(popNS).Get(ctx, podName(claimUID), metav1.GetOptions{})
	if s.pod = exists(t, err); s.pod {
		s.podPhase = pd.Status.Phase
	}
	v, err := p.kube.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	if exists(t, err) {
		s.pvClaim = v.Spec.ClaimRef.UID
	}
	return s
}

func exists(t *testing.T, err error) bool {
	t.Helper()
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func TestSync(t *testing.T) {
	otherKind := func(c *corev1.PersistentVolumeClaim) { c.Spec.DataSourceRef.Kind = "Other" }
	ownNS := func(c *corev1.PersistentVolumeClaim) { c.Namespace = popNS }
	elsewhere := func(c *corev1.PersistentVolumeClaim) { c.Spec.DataSourceRef.Namespace = new("elsewhere") }
	noClass := func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = new("missing") }
	tests := []struct {
		name    string
		objs    []runtime.Object
		noHello bool
		key     claimKey
		want    state
		wantErr bool
	}{
		{name: "waits for the scheduler to choose a node", objs: []runtime.Object{claim(noNode)}},
		{name: "waits for the Hello", objs: []runtime.Object{claim()}, noHello: true},
		{name: "leaves claims of other data sources", objs: []runtime.Object{claim(otherKind)}},
		{name: "leaves claims of a Hello in another namespace", objs: []runtime.Object{claim(elsewhere)}},
		{
			name: "leaves claims of its own namespace", objs: []runtime.Object{claim(ownNS)},
			key: claimKey{namespace: popNS, name: "claim", uid: claimUID},
		},
		{name: "fails without the StorageClass", objs: []runtime.Object{claim(noClass)}, wantErr: true},
		{
			name: "makes the prime claim and the pod", objs: []runtime.Object{claim()},
			want: state{prime: true, pod: true},
		},
		{
			name: "waits for the pod", objs: []runtime.Object{claim(), prime(), pod(corev1.PodRunning), pv(primeUID)},
			want: state{prime: true, pod: true, podPhase: corev1.PodRunning, pvClaim: primeUID},
		},
		{
			name: "hands the PV over when the pod succeeded",
			objs: []runtime.Object{claim(), prime(), pod(corev1.PodSucceeded), pv(primeUID)},
			want: state{prime: true, pod: true, podPhase: corev1.PodSucceeded, pvClaim: claimUID},
		},
		{
			name: "waits for the PV controller after the hand-over",
			objs: []runtime.Object{claim(), prime(), pod(corev1.PodSucceeded), pv(claimUID)},
			want: state{prime: true, pod: true, podPhase: corev1.PodSucceeded, pvClaim: claimUID},
		},
		{
			name: "refuses a PV that is not the prime claim's",
			objs: []runtime.Object{claim(), prime(), pod(corev1.PodSucceeded), pv("someone")},
			want: state{prime: true, pod: true, podPhase: corev1.PodSucceeded, pvClaim: "someone"}, wantErr: true,
		},
		{
			name: "deletes a failed pod to retry", objs: []runtime.Object{claim(), prime(), pod(corev1.PodFailed)},
			want: state{prime: true},
		},
		{
			name: "cleans up once the claim is bound",
			objs: []runtime.Object{claim(boundTo(pvName)), prime(), pod(corev1.PodSucceeded), pv(claimUID)},
			want: state{pvClaim: claimUID},
		},
		{
			name: "cleans up when the claim is gone", objs: []runtime.Object{prime(), pod(corev1.PodRunning)},
		},
		{
			name: "cleans up for a claim replaced by one of the same name",
			objs: []runtime.Object{claim(func(c *corev1.PersistentVolumeClaim) { c.UID = "new" }), prime(), pod("")},
		},
		{name: "cleans up when nothing is left", objs: []runtime.Object{claim(boundTo(pvName))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dyn []runtime.Object
			if !tt.noHello {
				dyn = append(dyn, hello())
			}
			p := newPopulator(append(classes(), tt.objs...), dyn...)
			k := key
			if tt.key != (claimKey{}) {
				k = tt.key
			}
			err := p.sync(context.Background(), k)
			if (err != nil) != tt.wantErr {
				t.Fatalf("sync: error %v, want an error: %t", err, tt.wantErr)
			}
			if got := observe(t, p); got != tt.want {
				t.Errorf("after sync: %+v, want %+v", got, tt.want)
			}
		})
	}
}
