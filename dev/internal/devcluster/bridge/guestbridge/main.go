// Command guestbridge runs the guest side of a host-guest bridge (package bridge) on a serial
// line of a User-mode Linux guest, for a guest init script to start in the background:
//
//	guestbridge -tty /dev/ttyS1 -forward 127.0.0.1:6443=127.0.0.1:6443 -ready /run/bridge.ready &
//
// Each -forward LISTEN=TARGET listens on the guest's LISTEN and carries connections to the host's
// TARGET; the host may dial any guest loopback address, or only those given with -allow, and
// addresses in the networks given with -allow-net (e.g. the guest's pod network). It prints "guestbridge: ready" to stderr (and creates the -ready file) once the host has answered
// and the listeners are open, and runs until the line ends (exit 1) or SIGTERM/SIGINT (exit 0).
// Build it with CGO_ENABLED=0 so it runs in any guest.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/bridge"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

type config struct {
	tty       string
	ready     string
	wait      time.Duration
	verbosity int
	opts      bridge.Options
}

func parseFlags(args []string) (config, error) {
	var c config
	var forward, allow, allowNets listFlag
	fs := flag.NewFlagSet("guestbridge", flag.ContinueOnError)
	fs.StringVar(&c.tty, "tty", "/dev/ttyS1", "serial line to the host")
	fs.Var(&forward, "forward", "LISTEN=TARGET: carry connections to guest LISTEN to host TARGET (repeatable)")
	fs.Var(&allow, "allow", "guest address the host may dial (repeatable; default: any loopback address)")
	fs.Var(&allowNets, "allow-net", "non-loopback guest network (CIDR) the host may dial addresses in (repeatable)")
	fs.StringVar(&c.ready, "ready", "", "file to create once the bridge is up")
	fs.DurationVar(&c.wait, "wait", 5*time.Minute, "how long to wait for the host to answer")
	fs.IntVar(&c.verbosity, "v", 0, "log verbosity (1 logs every connection)")
	fs.IntVar(&c.opts.LineWindow, "line-window", 0, "bytes in flight to the host (0: bridge.DefaultLineWindow)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.opts.Allow = allow
	for _, n := range allowNets {
		p, err := netip.ParsePrefix(n)
		if err != nil {
			return c, fmt.Errorf("-allow-net %q: %w", n, err)
		}
		c.opts.AllowNets = append(c.opts.AllowNets, p.Masked())
	}
	c.opts.Forward = map[string]string{}
	for _, f := range forward {
		listen, target, ok := strings.Cut(f, "=")
		if !ok {
			return c, fmt.Errorf("-forward %q: want LISTEN=TARGET", f)
		}
		c.opts.Forward[listen] = target
	}
	return c, nil
}

func run(ctx context.Context, c config) error {
	c.opts.Log = funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, "guestbridge:", prefix, args)
	}, funcr.Options{Verbosity: c.verbosity})
	waitCtx, cancel := context.WithTimeout(ctx, c.wait)
	s, err := bridge.Guest(waitCtx, c.tty, c.opts)
	cancel()
	if err != nil {
		return err
	}
	defer s.Close()
	if c.ready != "" {
		if err := os.WriteFile(c.ready, []byte("ready\n"), 0o644); err != nil {
			return fmt.Errorf("write ready file: %w", err)
		}
	}
	fmt.Fprintln(os.Stderr, "guestbridge: ready")
	select {
	case <-ctx.Done():
		return nil
	case <-s.Done():
		return s.Wait()
	}
}

func main() {
	os.Exit(mainCode(os.Args[1:]))
}

// mainCode runs guestbridge and returns its exit code.
func mainCode(args []string) int {
	c, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "guestbridge:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "guestbridge:", err)
		return 1
	}
	return 0
}
