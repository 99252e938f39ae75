package mustgather

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lvm-operator/lvm-operator/internal/controller/lvmcluster"
)

// Exec runs command in container of pod, as kubectl exec does, writing its output to stdout and stderr.
type Exec func(ctx context.Context, pod *corev1.Pod, container string, command []string,
	stdout, stderr io.Writer) error

// NodeCommand is a read-only command run on every node: its output goes to nodes/NODE/File.
type NodeCommand struct {
	File string
	Args []string
}

// NodeCommands are run on every node in the host's mount namespace, through the node agent's pod. None
// prints key material: dmsetup table (dm-crypt keys) is left out on purpose.
var NodeCommands = []NodeCommand{
	{"lvm-version.txt", []string{"lvm", "version"}},
	{"vgs.json", []string{"vgs", "--reportformat", "json", "--units", "b", "--nosuffix",
		"-o", "+vg_uuid,vg_tags,pv_count,lv_count,vg_missing_pv_count"}},
	{"lvs.json", []string{"lvs", "-a", "--reportformat", "json", "--units", "b", "--nosuffix",
		"-o", "+lv_uuid,lv_tags,segtype,devices,data_percent,metadata_percent,sync_percent,lv_health_status"}},
	{"pvs.json", []string{"pvs", "-a", "--reportformat", "json", "--units", "b", "--nosuffix",
		"-o", "+pv_uuid,pv_tags,dev_size"}},
	{"lsblk.json", []string{"lsblk", "--json", "--bytes", "--output-all"}},
	{"dmsetup-info.txt", []string{"dmsetup", "info", "-c"}},
	{"dmsetup-tree.txt", []string{"dmsetup", "ls", "--tree"}},
	{"lvm.conf", []string{"cat", "/etc/lvm/lvm.conf"}},
	{"lvmconfig-diff.txt", []string{"lvmconfig", "--typeconfig", "diff"}},
	{"lvmdevices.txt", []string{"lvmdevices"}},
	{"mountinfo.txt", []string{"cat", "/proc/1/mountinfo"}},
	{"uname.txt", []string{"uname", "-a"}},
}

// hostCommand is args as run in the node agent's container: in the mount namespace of the host's PID 1
// (the agent runs with hostPID), in the C locale with the host's usual PATH.
func hostCommand(args []string) []string {
	return append([]string{"nsenter", "--target=1", "--mount", "--", "env", "LC_ALL=C",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, args...)
}

// nodeFiles are what one node gave: file name to content, and the run log.
type nodeFiles struct {
	node  string
	files map[string][]byte
}

// nodes runs NodeCommands on every node that has a running node agent pod and writes nodes/NODE/*. It
// returns the nodes it collected from.
func (g *Gatherer) nodes(ctx context.Context, a *archive, names []string) ([]string, error) {
	var pods corev1.PodList
	if err := g.c.List(ctx, &pods, client.InNamespace(g.o.OperatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": lvmcluster.NodeDaemonSetName}); err != nil {
		a.failed("nodes: not collected: list node agent pods: %v", err)
		return nil, nil
	}
	agents := map[string]*corev1.Pod{}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			agents[p.Spec.NodeName] = p
		}
	}
	results := make([]*nodeFiles, len(names))
	sem := make(chan struct{}, g.o.NodeParallel)
	var wg sync.WaitGroup
	for i, node := range names {
		agent := agents[node]
		if agent == nil {
			a.failed("nodes/%s: not collected: no running node agent pod on the node (no device class selects "+
				"it, or the agent is not running)", node)
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = g.node(ctx, a, agent)
		})
	}
	wg.Wait()
	var done []string
	for _, r := range results {
		if r == nil {
			continue
		}
		done = append(done, r.node)
		files := make([]string, 0, len(r.files))
		for f := range r.files {
			files = append(files, f)
		}
		slices.Sort(files)
		for _, f := range files {
			if err := a.add(path.Join("nodes", r.node, f), r.files[f]); err != nil {
				return nil, err
			}
		}
	}
	return done, nil
}

// node runs NodeCommands in the agent's pod, one after the other.
func (g *Gatherer) node(ctx context.Context, a *archive, agent *corev1.Pod) *nodeFiles {
	r := &nodeFiles{node: agent.Spec.NodeName, files: map[string][]byte{}}
	container := agent.Spec.Containers[0].Name
	for _, c := range agent.Spec.Containers {
		if c.Name == "node" {
			container = c.Name
		}
	}
	var log strings.Builder
	for i, cmd := range NodeCommands {
		cctx, cancel := context.WithTimeout(ctx, g.o.CommandTimeout)
		var stdout, stderr bytes.Buffer
		start := time.Now()
		err := g.exec(cctx, agent, container, hostCommand(cmd.Args), &stdout, &stderr)
		timedOut := cctx.Err() != nil && ctx.Err() == nil
		cancel()
		fmt.Fprintf(&log, "$ %s\n", strings.Join(cmd.Args, " "))
		if err != nil {
			msg := strings.TrimSpace(stderr.String())
			fmt.Fprintf(&log, "failed after %s: %v: %s\n", time.Since(start).Round(time.Millisecond), err, msg)
			a.failed("nodes/%s/%s: %s: %v: %s", r.node, cmd.File, cmd.Args[0], err, msg)
		} else {
			fmt.Fprintf(&log, "ok in %s, %d bytes\n", time.Since(start).Round(time.Millisecond), stdout.Len())
		}
		if err == nil || stdout.Len() > 0 {
			r.files[cmd.File] = stdout.Bytes()
		}
		if timedOut && i+1 < len(NodeCommands) {
			// A node that does not answer within the timeout would cost it again for every command.
			rest := len(NodeCommands) - i - 1
			fmt.Fprintf(&log, "the %d commands after it were not run: the node did not answer in time\n", rest)
			a.failed("nodes/%s: %d commands not run after %s timed out after %s", r.node, rest, cmd.Args[0],
				g.o.CommandTimeout)
			break
		}
	}
	fmt.Fprintf(&log, "(in pod %s/%s, container %s)\n", agent.Namespace, agent.Name, container)
	r.files["commands.txt"] = []byte(log.String())
	return r
}

// NewPodExec is the Exec of kubectl exec: the pods/exec API over WebSocket, or SPDY from an API server
// that does not upgrade to WebSocket.
func NewPodExec(cfg *rest.Config, cs kubernetes.Interface) Exec {
	return func(ctx context.Context, pod *corev1.Pod, container string, command []string,
		stdout, stderr io.Writer) error {
		req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).
			SubResource("exec").VersionedParams(&corev1.PodExecOptions{
			Container: container, Command: command, Stdout: true, Stderr: true,
		}, scheme.ParameterCodec)
		ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
		if err != nil {
			return fmt.Errorf("exec in pod %s: %w", pod.Name, err)
		}
		spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
		if err != nil {
			return fmt.Errorf("exec in pod %s: %w", pod.Name, err)
		}
		ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
		if err != nil {
			return fmt.Errorf("exec in pod %s: %w", pod.Name, err)
		}
		if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr}); err != nil {
			return fmt.Errorf("exec in pod %s: %w", pod.Name, err)
		}
		return nil
	}
}
