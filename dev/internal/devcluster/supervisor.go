package devcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Supervise runs the cluster described by stateDir's config until ctx ends, then tears it
// down. It is the body of `lvms-dev supervise`, which `up` starts detached; progress goes to out.
// On a startup failure it writes the error to Layout.Failed, tears down and returns it.
func Supervise(ctx context.Context, stateDir string, out io.Writer) error {
	l, err := NewLayout(stateDir)
	if err != nil {
		return err
	}
	var cfg Config
	if err := readJSON(l.Config(), &cfg); err != nil {
		return err
	}
	pidFile := l.PIDFile("supervisor")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		// Seen when up, right after starting this process, took it for dead (its command line is
		// empty while it execs; fixed in follow) and the caller's down removed run/. Say what is there.
		return fmt.Errorf("write supervisor pid file: %w (%s holds: %s)", err, l.Dir, dirNames(l.Dir))
	}
	defer os.Remove(pidFile)
	c, err := newCluster(l, cfg, out)
	if err != nil {
		return err
	}
	start := time.Now()
	startErr := c.start(ctx)
	if startErr == nil {
		fmt.Fprintf(out, "cluster ready in %s\n", time.Since(start).Round(100*time.Millisecond))
		if err := os.WriteFile(l.Ready(), []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644); err != nil {
			startErr = fmt.Errorf("write ready file: %w", err)
		}
	}
	if startErr != nil {
		if werr := os.WriteFile(l.Failed(), []byte(startErr.Error()+"\n"), 0o644); werr != nil {
			startErr = errors.Join(startErr, fmt.Errorf("write failed file: %w", werr))
		}
	} else {
		<-ctx.Done()
	}
	fmt.Fprintln(out, "stopping")
	stopStart := time.Now()
	stopErr := c.teardown()
	_ = os.Remove(l.Ready())
	fmt.Fprintf(out, "stopped in %s\n", time.Since(stopStart).Round(100*time.Millisecond))
	return errors.Join(startErr, stopErr)
}

// start brings the cluster up in order: PKI, node configuration and egress proxy, control plane,
// CRDs, snapshot-controller, the nodes, then the product installed from config/default.
func (c *cluster) start(ctx context.Context) error {
	if err := writeJSON(c.l.State(), c.state); err != nil {
		return err
	}
	if err := c.step("certificates, kubeconfigs", func() error {
		kubelets := make([]string, c.cfg.Nodes)
		for i := range kubelets {
			kubelets[i] = nodeName(i)
		}
		return generatePKI(c.l, c.state.Ports[portAPIServer], GuestAPIPort, kubelets, c.cfg.Users)
	}); err != nil {
		return err
	}
	if err := c.prepareRealNodes(); err != nil {
		return err
	}
	if err := c.startControlPlane(ctx); err != nil {
		return err
	}
	if err := c.startExtenderForward(); err != nil {
		return err
	}
	if err := c.applyCRDs(ctx); err != nil {
		return err
	}
	// The snapshot-controller is a cluster add-on, not the product: it runs on the host.
	if err := c.startSnapshotController(ctx); err != nil {
		return err
	}
	if err := c.startNodes(ctx); err != nil {
		return err
	}
	if c.cfg.ProductDigest == "" {
		return nil
	}
	return c.installProduct(ctx)
}

// teardown stops the guests, then the host processes in reverse order, and removes the egress
// proxy's and the node network's sockets.
func (c *cluster) teardown() error {
	errs := []error{c.stopNodes(), c.stopAll()}
	if c.forward != nil {
		c.forward.close()
	}
	if c.egress != nil {
		c.egress.close()
		_ = os.Remove(c.l.EgressSocket())
	}
	if c.nodeNet != nil {
		errs = append(errs, c.nodeNet.Close())
		_ = os.Remove(c.l.NodeNetSocket())
	}
	return errors.Join(errs...)
}

// dirNames lists the names in dir, for an error message.
func dirNames(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}
