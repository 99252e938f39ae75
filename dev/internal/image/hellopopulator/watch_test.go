package main

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// TestKeys checks that the events of the claim, of what the populator made for it and of its
// Hello lead to the claim, and that nothing else does.
func TestKeys(t *testing.T) {
	c := &controller{p: &populator{namespace: popNS}}
	other := claim(func(c *corev1.PersistentVolumeClaim) { c.Name, c.UID, c.Spec.DataSourceRef = "plain", "u2", nil })
	c.claims = listerOf(t, claim(), other, prime())
	tests := []struct {
		name string
		keys func(any) []claimKey
		obj  any
		want []claimKey
	}{
		{"the claim", c.claimKeys, claim(), []claimKey{key}},
		{"a claim of another data source", c.claimKeys, other, nil},
		{"the prime claim", c.claimKeys, prime(), []claimKey{key}},
		{"the pod", ownerKeys, pod(corev1.PodRunning), []claimKey{key}},
		{"a pod of someone else's", ownerKeys, &corev1.Pod{}, nil},
		{"the Hello", c.helloKeys, hello(), []claimKey{key}},
		{"a Hello of no claim", c.helloKeys, func() any { h := hello(); h.SetName("other"); return h }(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.keys(tt.obj); !slices.Equal(got, tt.want) {
				t.Errorf("keys %v, want %v", got, tt.want)
			}
		})
	}
}

func listerOf(t *testing.T, claims ...*corev1.PersistentVolumeClaim) corelisters.PersistentVolumeClaimLister {
	t.Helper()
	idx := cache.NewIndexer(
		cache.MetaNamespaceKeyFunc,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	)
	for _, c := range claims {
		if err := idx.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewPersistentVolumeClaimLister(idx)
}

// TestController runs the controller on fake clients and checks that the events of the Hello, the
// pod and the claim each lead to the next step of the protocol.
func TestController(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newPopulator(append(classes(), claim()))
	// The claim is synced once without its Hello; then the Hello's creation syncs it again.
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{helloGVR: "HelloList"})
	p.dynamic = dyn
	c, err := newController(p)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.run(ctx) }()
	kube := p.kube.CoreV1()
	await := func(step string, want state) {
		t.Helper()
		var got state
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true,
			func(context.Context) (bool, error) { got = observe(t, p); return got == want, nil })
		if err != nil {
			t.Fatalf("%s: %+v, want %+v", step, got, want)
		}
	}

	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			return slices.ContainsFunc(dyn.Actions(), func(a k8stesting.Action) bool {
				return a.GetVerb() == "get" && a.GetResource() == helloGVR
			}), nil
		})
	if err != nil {
		t.Fatal("the claim was not synced")
	}
	must(p.dynamic.Resource(helloGVR).Namespace(userNS).Create(ctx, hello(), metav1.CreateOptions{}))
	await("the Hello created", state{prime: true, pod: true})

	pr := must(kube.PersistentVolumeClaims(popNS).Get(ctx, primeName(claimUID), metav1.GetOptions{}))
	pr.UID, pr.Spec.VolumeName = primeUID, pvName
	must(kube.PersistentVolumeClaims(popNS).Update(ctx, pr, metav1.UpdateOptions{}))
	must(kube.PersistentVolumes().Create(ctx, pv(primeUID), metav1.CreateOptions{}))
	pd := must(kube.Pods(popNS).Get(ctx, podName(claimUID), metav1.GetOptions{}))
	pd.Status.Phase = corev1.PodSucceeded
	must(kube.Pods(popNS).UpdateStatus(ctx, pd, metav1.UpdateOptions{}))
	await("the pod succeeded", state{prime: true, pod: true, podPhase: corev1.PodSucceeded, pvClaim: claimUID})

	cl := must(kube.PersistentVolumeClaims(userNS).Get(ctx, "claim", metav1.GetOptions{}))
	cl.Spec.VolumeName = pvName
	must(kube.PersistentVolumeClaims(userNS).Update(ctx, cl, metav1.UpdateOptions{}))
	await("the claim bound", state{pvClaim: claimUID})

	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}
