package devcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
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
		return fmt.Errorf("write supervisor pid file: %w", err)
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

// start brings the cluster up in order.
func (c *cluster) start(ctx context.Context) error {
	if err := writeJSON(c.l.State(), c.state); err != nil {
		return err
	}
	var caPEM []byte
	if err := c.step("certificates, kubeconfigs", func() (err error) {
		var kubelets []string
		if c.cfg.real() {
			for i := range c.cfg.Nodes {
				kubelets = append(kubelets, nodeName(i))
			}
		}
		caPEM, err = generatePKI(c.l, c.state.Ports[portAPIServer], GuestAPIPort, kubelets)
		return err
	}); err != nil {
		return err
	}
	if c.cfg.real() {
		if err := c.prepareRealNodes(); err != nil {
			return err
		}
	}
	if err := c.startControlPlane(ctx); err != nil {
		return err
	}
	if err := c.applyCRDs(ctx); err != nil {
		return err
	}
	if c.cfg.real() {
		return c.startRealCluster(ctx)
	}
	if err := c.applyDevManifest(ctx, caPEM); err != nil {
		return err
	}
	if err := c.startStorage(ctx); err != nil {
		return err
	}
	return c.startNodes(ctx)
}

// startRealCluster starts what a cluster of real nodes needs on the host besides the control
// plane (the snapshot-controller), then the nodes, then installs the product into it.
func (c *cluster) startRealCluster(ctx context.Context) error {
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

// teardown stops the guests, then the host processes in reverse order, and removes sockets.
func (c *cluster) teardown() error {
	errs := []error{c.stopNodes(), c.stopAll()}
	if c.egress != nil {
		c.egress.close()
		_ = os.Remove(c.l.EgressSocket())
	}
	if err := os.RemoveAll(c.l.CSI()); err != nil {
		errs = append(errs, fmt.Errorf("remove CSI sockets: %w", err))
	}
	return errors.Join(errs...)
}
