package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster"
)

// WorkloadImage is the demo pods' image (busybox), imported into every node.
const WorkloadImage = "lvms.local/workload:dev"

// outputLines is how much of a pod's log the demo reads and shows.
const outputLines = 20

// pollInterval is how often the demo looks at the objects it waits for.
const pollInterval = 500 * time.Millisecond

// kube is the demo's API access.
type kube struct {
	cfg     *rest.Config
	c       client.Client
	cs      kubernetes.Interface
	ns      string
	timeout time.Duration
	out     io.Writer
	// accessMode is the demo claims' access mode.
	accessMode corev1.PersistentVolumeAccessMode
}

func newKube(kubeconfig, ns string, timeout time.Duration, out io.Writer) (*kube, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, lvmv1alpha1.AddToScheme, topolvmv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("clientset for %s: %w", cfg.Host, err)
	}
	return &kube{cfg: cfg, c: c, cs: cs, ns: ns, timeout: timeout, out: out}, nil
}

// waitFor polls cond until it is done; cond describes what it saw, and a timeout reports the last
// description.
func (k *kube) waitFor(
	ctx context.Context,
	what string,
	cond func(ctx context.Context) (done bool, saw string, err error),
) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, k.timeout, true, func(ctx context.Context) (bool, error) {
		done, saw, err := cond(ctx)
		if saw != "" {
			last = saw
		}
		return done, err
	})
	if err != nil {
		if last != "" {
			return fmt.Errorf("wait for %s (last seen: %s): %w", what, last, err)
		}
		return fmt.Errorf("wait for %s: %w", what, err)
	}
	return nil
}

func (k *kube) readyNodes(ctx context.Context) ([]string, error) {
	var nodes corev1.NodeList
	if err := k.c.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var ready []string
	for i := range nodes.Items {
		for _, c := range nodes.Items[i].Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = append(ready, nodes.Items[i].Name)
			}
		}
	}
	if len(ready) == 0 {
		return nil, errors.New("no node is Ready")
	}
	slices.Sort(ready)
	return ready, nil
}

// podSpec describes a demo pod: a shell script, optionally a claim mounted at mountPath.
type podSpec struct {
	name, script, claim string
	// nodeName binds the pod directly (no scheduler); onNode asks the scheduler for that node,
	// which a WaitForFirstConsumer claim needs.
	nodeName, onNode string
	restart          corev1.RestartPolicy
}

func (k *kube) createPod(ctx context.Context, s podSpec) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      s.name,
			Namespace: k.ns,
			Labels:    map[string]string{"app.kubernetes.io/part-of": "lvms-dev-demo"},
		},
		Spec: corev1.PodSpec{
			NodeName:      s.nodeName,
			RestartPolicy: s.restart,
			Containers: []corev1.Container{{
				Name:            "main",
				Image:           WorkloadImage,
				ImagePullPolicy: corev1.PullNever, // imported into the nodes, no registry
				Command:         []string{"sh", "-c", s.script},
			}},
			TerminationGracePeriodSeconds: new(int64(2)),
		},
	}
	if s.onNode != "" {
		pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: s.onNode}
	}
	if s.claim != "" {
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.claim}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: mountPath}}
	}
	if err := k.c.Create(ctx, pod); err != nil {
		return fmt.Errorf("create pod %s: %w", s.name, err)
	}
	return nil
}

// podPhase waits until the pod reaches one of the phases and returns it.
func (k *kube) podPhase(ctx context.Context, name string, phases ...corev1.PodPhase) (*corev1.Pod, error) {
	var pod corev1.Pod
	err := k.waitFor(
		ctx,
		fmt.Sprintf("pod %s to be %v", name, phases),
		func(ctx context.Context) (bool, string, error) {
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: k.ns, Name: name}, &pod); err != nil {
				return false, "", fmt.Errorf("get pod %s: %w", name, err)
			}
			if slices.Contains(phases, pod.Status.Phase) {
				return true, "", nil
			}
			if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
				return false, "", fmt.Errorf("pod %s ended %s: %s", name, pod.Status.Phase, k.output(ctx, &pod))
			}
			return false, describePod(&pod), nil
		},
	)
	return &pod, err
}

// describePod is what a waiting pod shows: phase, node, message and unschedulable reasons.
func describePod(pod *corev1.Pod) string {
	s := fmt.Sprintf("phase %s node %q", pod.Status.Phase, pod.Spec.NodeName)
	if pod.Status.Message != "" {
		s += " message " + pod.Status.Message
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			s += " unschedulable: " + c.Message
		}
	}
	return s
}

// output is the pod's last output: its log (the pods/log API, which the apiserver fetches from
// the kubelet).
func (k *kube) output(ctx context.Context, pod *corev1.Pod) string {
	b, err := k.cs.CoreV1().Pods(
		pod.Namespace,
	).GetLogs(
		pod.Name,
		&corev1.PodLogOptions{TailLines: new(int64(outputLines))},
	).DoRaw(
		ctx,
	)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return strings.TrimRight(string(b), "\n")
}

// runOnNode runs script on node in the node agent's container (AgentExec) and returns its output.
func (k *kube) runOnNode(ctx context.Context, node, script string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	return AgentExec(ctx, k.cfg, k.c, k.cs, devcluster.Namespace, node, script)
}

// deletePods deletes the pods and waits until they are gone (the kubelet removes them after
// unpublishing their volumes).
func (k *kube) deletePods(ctx context.Context, names ...string) error {
	for _, n := range names {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: k.ns}}
		if err := k.c.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete pod %s: %w", n, err)
		}
	}
	for _, n := range names {
		if err := k.waitGone(ctx, "pod "+n, &corev1.Pod{}, n); err != nil {
			return err
		}
	}
	return nil
}

// waitGone waits until the object is not found.
func (k *kube) waitGone(ctx context.Context, what string, obj client.Object, name string) error {
	key := client.ObjectKey{Namespace: k.ns, Name: name}
	return k.waitFor(ctx, what+" to be gone", func(ctx context.Context) (bool, string, error) {
		err := k.c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", fmt.Errorf("get %s: %w", what, err)
		}
		return false, fmt.Sprintf(
			"still there (deletion requested: %t, finalizers %v)",
			obj.GetDeletionTimestamp() != nil,
			obj.GetFinalizers(),
		), nil
	})
}
