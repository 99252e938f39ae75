package main

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPrimeAndPod checks what the populator makes for the claim: a prime claim the provisioner
// provisions on the claim's node with the claim's size, class and mode, and a pod there that
// runs this image in populate mode on it.
func TestPrimeAndPod(t *testing.T) {
	block := func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = new(corev1.PersistentVolumeBlock) }
	now := func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = new(immediate); noNode(c) }
	tests := []struct {
		name     string
		claim    *corev1.PersistentVolumeClaim
		node     string
		fileArg  string
		device   bool
		wantMode corev1.PersistentVolumeMode
	}{
		{
			"filesystem on the chosen node",
			claim(),
			testNode,
			"example-test.txt",
			false,
			corev1.PersistentVolumeFilesystem,
		},
		{"block on the chosen node", claim(block), testNode, devicePath, true, corev1.PersistentVolumeBlock},
		{"immediate binding, no node", claim(now), "", "example-test.txt", false, corev1.PersistentVolumeFilesystem},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			p := newPopulator(append(classes(), tt.claim), hello())
			if err := p.sync(ctx, key); err != nil {
				t.Fatal(err)
			}
			pr, err := p.kube.CoreV1().PersistentVolumeClaims(popNS).Get(ctx, primeName(claimUID), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := pr.Annotations[annSelectedNode]; got != tt.node {
				t.Errorf("prime claim's selected node %q, want %q", got, tt.node)
			}
			if pr.Annotations[annClaim] != "test/claim" || pr.Annotations[annClaimUID] != string(claimUID) {
				t.Errorf("prime claim's owner annotations %v", pr.Annotations)
			}
			if *pr.Spec.StorageClassName != *tt.claim.Spec.StorageClassName || *pr.Spec.VolumeMode != tt.wantMode ||
				!pr.Spec.Resources.Requests.Storage().Equal(*tt.claim.Spec.Resources.Requests.Storage()) ||
				!slices.Equal(pr.Spec.AccessModes, tt.claim.Spec.AccessModes) || pr.Spec.DataSourceRef != nil {
				t.Errorf("prime claim's spec %+v, want the claim's class, size, modes and no data source", pr.Spec)
			}
			pd, err := p.kube.CoreV1().Pods(popNS).Get(ctx, podName(claimUID), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkPod(t, pd, tt.node, tt.fileArg, tt.device)
		})
	}
}

func checkPod(t *testing.T, pd *corev1.Pod, node, fileArg string, device bool) {
	t.Helper()
	c := pd.Spec.Containers[0]
	wantArgs := []string{"--mode=populate", "--mount-path=/mnt", "--file-name=" + fileArg,
		"--file-contents=Hello from namespace test"}
	if c.Image != testImage || !slices.Equal(c.Args, wantArgs) {
		t.Errorf("pod runs %s %q, want %s %q", c.Image, c.Args, testImage, wantArgs)
	}
	if pd.Spec.NodeName != node || pd.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("pod on node %q restart %s, want node %q restart Never", pd.Spec.NodeName, pd.Spec.RestartPolicy, node)
	}
	if v := pd.Spec.Volumes[0]; v.PersistentVolumeClaim == nil ||
		v.PersistentVolumeClaim.ClaimName != primeName(claimUID) {
		t.Errorf("pod volume %+v, want the prime claim", v)
	}
	if device != (len(c.VolumeDevices) == 1 && c.VolumeDevices[0].DevicePath == devicePath) ||
		device == (len(c.VolumeMounts) == 1 && c.VolumeMounts[0].MountPath == mountPath) {
		t.Errorf("pod mounts %+v, devices %+v; want the device: %t", c.VolumeMounts, c.VolumeDevices, device)
	}
}

// TestFlow runs the protocol to its end, playing the provisioner, the kubelet and the PV
// controller between the syncs, each sync twice (the populator may be restarted at any point):
// the claim ends up bound to the PV the pod wrote, and nothing of the populator's is left.
func TestFlow(t *testing.T) {
	ctx := context.Background()
	p := newPopulator(append(classes(), claim()), hello())
	kube := p.kube.CoreV1()
	sync := func(want state) {
		t.Helper()
		for range 2 {
			if err := p.sync(ctx, key); err != nil {
				t.Fatal(err)
			}
		}
		if got := observe(t, p); got != want {
			t.Fatalf("after sync: %+v, want %+v", got, want)
		}
	}
	sync(state{prime: true, pod: true})

	// The provisioner provisions the prime claim (the API server gives it its UID).
	pr := must(kube.PersistentVolumeClaims(popNS).Get(ctx, primeName(claimUID), metav1.GetOptions{}))
	pr.UID, pr.Spec.VolumeName = primeUID, pvName
	must(kube.PersistentVolumeClaims(popNS).Update(ctx, pr, metav1.UpdateOptions{}))
	must(kube.PersistentVolumes().Create(ctx, pv(primeUID), metav1.CreateOptions{}))
	sync(state{prime: true, pod: true, pvClaim: primeUID})

	// The pod writes the file.
	pd := must(kube.Pods(popNS).Get(ctx, podName(claimUID), metav1.GetOptions{}))
	pd.Status.Phase = corev1.PodSucceeded
	must(kube.Pods(popNS).UpdateStatus(ctx, pd, metav1.UpdateOptions{}))
	sync(state{prime: true, pod: true, podPhase: corev1.PodSucceeded, pvClaim: claimUID})
	v := must(kube.PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{}))
	if r := v.Spec.ClaimRef; r.Namespace != userNS || r.Name != "claim" || r.ResourceVersion != "7" ||
		r.Kind != "PersistentVolumeClaim" {
		t.Errorf("PV's claimRef %+v, want the claim", r)
	}
	if got := v.Annotations[annPopulatedFrom]; got != "test/example-hello" {
		t.Errorf("PV's %s = %q, want test/example-hello", annPopulatedFrom, got)
	}

	// The PV controller binds the claim to the PV.
	c := must(kube.PersistentVolumeClaims(userNS).Get(ctx, "claim", metav1.GetOptions{}))
	c.Spec.VolumeName = pvName
	must(kube.PersistentVolumeClaims(userNS).Update(ctx, c, metav1.UpdateOptions{}))
	sync(state{pvClaim: claimUID})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
