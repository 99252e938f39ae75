package devcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/umlswitch"
)

// Port names in State.Ports.
const (
	portEtcd        = "etcd"
	portEtcdPeer    = "etcd-peer"
	portAPIServer   = "kube-apiserver"
	portKCM         = "kube-controller-manager"
	portScheduler   = "kube-scheduler"
	portSnapshotCtl = "snapshot-controller"
)

// allPorts are the listeners the supervisor allocates, in start order.
var allPorts = []string{portEtcd, portEtcdPeer, portAPIServer, portKCM, portScheduler, portSnapshotCtl, portExtender}

// componentTimeout bounds how long one component may take to become ready.
const componentTimeout = 90 * time.Second

// cluster is the supervisor's view of what it runs.
type cluster struct {
	l     Layout
	cfg   Config
	state State
	out   io.Writer
	// mu guards procs and stopping: keep replaces a component that exited.
	mu       sync.Mutex
	procs    []*proc
	stopping bool
	guests   []*guest
	http     *http.Client
	// egress is the apiserver's way into the nodes (nil until prepareRealNodes).
	egress *egressProxy
	// nodeNet is the Ethernet switch between the guests (nil until prepareRealNodes).
	nodeNet *umlswitch.Switch
	// forward carries the scheduler's extender calls into the cluster (nil without the extender).
	forward *serviceForward
}

func newCluster(l Layout, cfg Config, out io.Writer) (*cluster, error) {
	st := State{Supervisor: os.Getpid(), Ports: map[string]int{}}
	for _, name := range allPorts {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		st.Ports[name] = p
	}
	// Health probes only ever go to 127.0.0.1; the components' serving certificates are
	// self-signed by each of them, so they are not verified.
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	} //nolint:gosec // loopback health probes
	return &cluster{
		l:     l,
		cfg:   cfg,
		state: st,
		out:   out,
		http:  &http.Client{Transport: tr, Timeout: 2 * time.Second},
	}, nil
}

func (c *cluster) port(name string) string { return strconv.Itoa(c.state.Ports[name]) }

func (c *cluster) kube(bin string) string { return filepath.Join(c.cfg.KubeAssets, bin) }

func (c *cluster) csi(bin string) string { return filepath.Join(c.cfg.CSITools, bin) }

func (c *cluster) pki(file string) string { return filepath.Join(c.l.PKI(), file) }

// step runs fn and reports "<what> … ready in <d>" (or nothing when it failed).
func (c *cluster) step(what string, fn func() error) error {
	start := time.Now()
	if err := fn(); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "%-28s ready in %s\n", what, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// run starts a component, records it and waits until ready reports nil.
func (c *cluster) run(ctx context.Context, s spec, ready func(context.Context) error) error {
	return c.step(s.name, func() error {
		p, err := startProc(c.l, s)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.procs = append(c.procs, p)
		i := len(c.procs) - 1
		c.mu.Unlock()
		c.state.Components = append(c.state.Components, s.name)
		if err := writeJSON(c.l.State(), c.state); err != nil {
			return err
		}
		if err := waitReady(ctx, p, ready); err != nil {
			return err
		}
		go c.keep(i, s)
		return nil
	})
}

// restartDelay is how long keep waits before it starts a component that exited again.
const restartDelay = time.Second

// keep starts component i again whenever it exits while the cluster runs, as the kubelet restarts
// the static pods of a control plane (dev/e2e's chaos test kills them with SIGKILL). It returns
// once the cluster stops.
func (c *cluster) keep(i int, s spec) {
	for {
		c.mu.Lock()
		if c.stopping {
			c.mu.Unlock()
			return
		}
		p := c.procs[i]
		c.mu.Unlock()
		<-p.exited
		time.Sleep(restartDelay)
		c.mu.Lock()
		if c.stopping {
			c.mu.Unlock()
			return
		}
		fmt.Fprintf(c.out, "%s exited (%v): starting it again\n", s.name, p.err)
		if np, err := startProc(c.l, s); err != nil {
			fmt.Fprintf(c.out, "%s: %v\n", s.name, err)
		} else {
			c.procs[i] = np
		}
		c.mu.Unlock()
	}
}

// waitReady polls ready until it succeeds, the process exits, or componentTimeout passes.
func waitReady(ctx context.Context, p *proc, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, componentTimeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		last = ready(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return failure(p.name, p.log, fmt.Errorf("exited (%w) before it was ready", p.err))
		case <-ctx.Done():
			return failure(p.name, p.log, fmt.Errorf("not ready after %s: %w", componentTimeout, last))
		case <-tick.C:
		}
	}
}

// httpOK returns a readiness check that GETs url and wants 200.
func (c *cluster) httpOK(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("GET %s: %w", url, err)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return fmt.Errorf("GET %s: %w", url, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
		}
		return nil
	}
}

// startControlPlane starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler.
func (c *cluster) startControlPlane(ctx context.Context) error {
	etcdURL := "http://127.0.0.1:" + c.port(portEtcd)
	peerURL := "http://127.0.0.1:" + c.port(portEtcdPeer)
	if err := c.run(ctx, spec{name: "etcd", path: c.kube("etcd"), args: []string{
		"--name=dev", "--data-dir=" + c.l.Etcd(), "--unsafe-no-fsync",
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=dev=" + peerURL,
	}}, c.httpOK(etcdURL+"/health")); err != nil {
		return err
	}
	api := "https://127.0.0.1:" + c.port(portAPIServer)
	if err := c.run(ctx, spec{name: "kube-apiserver", path: c.kube("kube-apiserver"), args: append([]string{
		"--etcd-servers=" + etcdURL, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + c.port(portAPIServer), "--endpoint-reconciler-type=none",
		"--tls-cert-file=" + c.pki(apiserverCertFile), "--tls-private-key-file=" + c.pki(apiserverKeyFile),
		"--client-ca-file=" + c.pki(caCertFile), "--service-cluster-ip-range=10.0.0.0/24",
		"--service-account-issuer=" + api, "--service-account-key-file=" + c.pki(saPubFile),
		"--service-account-signing-key-file=" + c.pki(saKeyFile),
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true", "--cert-dir=" + c.pki("apiserver-generated"),
	}, append(c.realAPIServerArgs(), c.cfg.APIServerArgs...)...)}, c.httpOK(api+"/readyz")); err != nil {
		return err
	}
	kc := c.l.Kubeconfig()
	common := []string{"--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1"}
	if err := c.run(
		ctx,
		spec{name: "kube-controller-manager", path: c.kube("kube-controller-manager"), args: append(append(common,
			"--kubeconfig="+kc, "--leader-elect=false",
			"--secure-port="+c.port(portKCM), "--cert-dir="+c.pki("kcm"),
			"--controllers=*,-serviceaccount-token", "--root-ca-file="+c.pki(caCertFile),
			"--service-account-private-key-file="+c.pki(saKeyFile), "--use-service-account-credentials=false",
		), c.cfg.KCMArgs...)},
		c.httpOK("https://127.0.0.1:"+c.port(portKCM)+"/healthz"),
	); err != nil {
		return err
	}
	schedArgs, err := c.schedulerArgs()
	if err != nil {
		return err
	}
	return c.run(ctx, spec{name: "kube-scheduler", path: c.kube("kube-scheduler"), args: append(append(common,
		"--secure-port="+c.port(portScheduler), "--cert-dir="+c.pki("scheduler"),
	), schedArgs...)}, c.httpOK("https://127.0.0.1:"+c.port(portScheduler)+"/healthz"))
}

// startSnapshotController starts the snapshot-controller (a cluster add-on, not the product).
func (c *cluster) startSnapshotController(ctx context.Context) error {
	return c.run(ctx, spec{name: "snapshot-controller", path: c.csi("snapshot-controller"), args: []string{
		"--kubeconfig=" + c.l.Kubeconfig(), "--http-endpoint=127.0.0.1:" + c.port(portSnapshotCtl),
	}}, c.httpOK("http://127.0.0.1:"+c.port(portSnapshotCtl)+"/metrics"))
}

// stopAll stops the host processes in reverse start order.
func (c *cluster) stopAll() error {
	c.mu.Lock()
	c.stopping = true
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		p.stop(10 * time.Second)
		if aliveUnder(p.cmd.Process.Pid, c.l.Dir) {
			errs = append(errs, fmt.Errorf("%s (pid %d) survived SIGKILL", p.name, p.cmd.Process.Pid))
		}
	}
	return errors.Join(errs...)
}
