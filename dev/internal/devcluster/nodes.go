package devcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/bridge"
	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/umlswitch"
	"github.com/lvm-operator/lvm-operator/dev/internal/uml"
)

// Node timing: the guest boots and its bridge answers within bridgeTimeout; all nodes are Ready
// with their CSINode within nodesTimeout (each guest imports every image before its kubelet starts:
// about 1 min on an idle machine, over 3 min on a busy one, as in a make test whose e2e lane failed
// so at b1b9be4 while the host lane ran the race-detector tests); a guest gets guestStopGrace to exit.
const (
	bridgeTimeout  = 3 * time.Minute
	nodesTimeout   = 6 * time.Minute
	guestStopGrace = 30 * time.Second
)

// guest is one node's UML guest and the host side of its bridge.
type guest struct {
	index        int
	name, prefix string
	cancel       context.CancelFunc
	done         chan struct{}
	err          error // valid after done is closed
	line         net.Conn
	guestEnd     *os.File
	console      *os.File
	bridgeLog    *os.File
	host         *bridge.HostSession
}

// startNodes boots the guests in parallel, waits for each bridge, then for the nodes to be Ready.
func (c *cluster) startNodes(ctx context.Context) error {
	if c.cfg.Nodes == 0 {
		return nil
	}
	start := time.Now()
	for i := range c.cfg.Nodes {
		g, err := c.bootGuest(i)
		if err != nil {
			return err
		}
		c.guests = append(c.guests, g)
		c.state.Nodes = append(c.state.Nodes, g.name)
	}
	if err := writeJSON(c.l.State(), c.state); err != nil {
		return err
	}
	for _, g := range c.guests {
		if err := c.connect(ctx, g); err != nil {
			return err
		}
		fmt.Fprintf(
			c.out,
			"%-28s ready in %s\n",
			g.name+" guest + bridge",
			time.Since(start).Round(100*time.Millisecond),
		)
	}
	// The node agents come with an LVMCluster, so only the kubelets are waited for.
	return c.step(fmt.Sprintf("%d node(s) Ready", len(c.guests)), func() error { return c.waitNodes(ctx) })
}

// bootGuest starts guest i: sparse disks, the bridge's serial line, hack/uml/real-node.sh as its
// command, the console in logs/node-<i>-console.log.
func (c *cluster) bootGuest(i int) (*guest, error) {
	g := &guest{index: i, name: nodeName(i), prefix: nodeName(i), done: make(chan struct{})}
	var err error
	if g.line, g.guestEnd, err = uml.NewSerialLine(g.name + "-bridge"); err != nil {
		return nil, err
	}
	if g.console, err = os.Create(c.l.Log(g.prefix + "-console")); err != nil {
		g.closeFiles()
		return nil, fmt.Errorf("console log of %s: %w", g.name, err)
	}
	disks := make([]uml.Disk, c.cfg.Disks)
	for d := range disks {
		disks[d] = uml.Disk{Size: c.cfg.DiskSize}
	}
	hackDir := filepath.Join(c.cfg.RepoDir, "hack", "uml")
	const script = "real-node.sh"
	opts := uml.Options{
		Command: []string{"/bin/sh", filepath.Join(hackDir, script)},
		Env:     c.realNodeEnv(i, g.name, g.prefix),
		Disks:   disks, MemoryMiB: c.cfg.MemoryMiB, Stdout: g.console, ShowBoot: true,
		SharedDirs:  []string{c.l.Logs()},
		SerialLines: []uml.SerialLine{{Index: 1, File: g.guestEnd}},
		KernelArgs:  []string{umlswitch.KernelArg(0, linkMAC(i), c.l.NodeNetSocket())},
		HackDir:     hackDir, TempDir: c.l.Guests(),
	}
	gctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	go func() {
		res, err := uml.Run(gctx, opts)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("%s exited with %d", script, res.ExitCode)
		}
		g.err = err
		close(g.done)
	}()
	return g, nil
}

// connect waits for the guest's bridge, failing early when the guest ends.
func (c *cluster) connect(ctx context.Context, g *guest) error {
	hctx, cancel := context.WithTimeout(ctx, bridgeTimeout)
	defer cancel()
	go func() {
		select {
		case <-g.done:
			cancel()
		case <-hctx.Done():
		}
	}()
	logFile, err := os.OpenFile(c.l.Log(g.prefix+"-bridge-host"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("bridge log of %s: %w", g.name, err)
	}
	g.bridgeLog = logFile
	log := fileLogger(logFile)
	opts := bridge.Options{Allow: []string{"127.0.0.1:" + c.port(portAPIServer)}, Log: log}
	h, err := bridge.Host(hctx, g.line, opts)
	g.line = nil // Host owns it now
	if err != nil {
		return c.guestFailure(g, err)
	}
	g.host = h
	if c.egress != nil {
		c.egress.register(g.index, h)
	}
	go func() { // a bridge that ends on its own leaves the node unreachable: say why
		if err := h.Wait(); err != nil {
			log.Error(err, "Bridge ended")
		}
	}()
	return nil
}

// guestFailure names the guest, why it failed, and the logs to read.
func (c *cluster) guestFailure(g *guest, cause error) error {
	select {
	case <-g.done:
		if g.err != nil {
			cause = errors.Join(cause, g.err)
		}
	default:
	}
	logPath := c.l.Log(g.prefix + "-kubelet")
	return fmt.Errorf("%w\nkubelet log %s:\n%s", failure(g.name, c.l.Log(g.prefix+"-console"), cause),
		logPath, tailFile(logPath, 10))
}

// stopNodes stops the guests (UML kills the guest processes on SIGTERM) and closes their bridges.
func (c *cluster) stopNodes() error {
	var errs []error
	for _, g := range c.guests {
		g.cancel()
	}
	for _, g := range c.guests {
		select {
		case <-g.done:
		case <-time.After(guestStopGrace):
			errs = append(errs, fmt.Errorf("%s did not stop within %s", g.name, guestStopGrace))
		}
		if g.host != nil {
			_ = g.host.Close()
		}
		g.closeFiles()
	}
	c.guests = nil
	return errors.Join(errs...)
}

func (g *guest) closeFiles() {
	for _, f := range []interface{ Close() error }{g.guestEnd, g.console, g.bridgeLog} {
		if f != nil {
			_ = f.Close()
		}
	}
	if g.line != nil {
		_ = g.line.Close()
	}
}

// fileLogger logs to w, a line per entry with its time, up to V(1): the host-side logs of the
// nodes' bridges and of the switch between them.
func fileLogger(w io.Writer) logr.Logger {
	return funcr.New(
		func(prefix, args string) { fmt.Fprintln(w, time.Now().Format(time.RFC3339Nano), prefix, args) },
		funcr.Options{Verbosity: 1},
	)
}
