// Command umlrun boots a User-mode Linux guest (see package uml), runs one command in it with
// the console on stdout, and exits with the guest command's exit code (125 when the guest itself
// failed).
//
//	go -C dev run ./cmd/umlrun [-disks 8x1G] [-ro-disk] [-mem 512] [-timeout 10m] \
//	    [-env K=V]... [-share DIR]... [-dir DIR] [-standard-layout] -- /abs/path/to/cmd args...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lvm-operator/lvm-operator/dev/internal/uml"
)

// exitGuestFailed is the exit code when no guest exit code was obtained.
const exitGuestFailed = 125

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	os.Exit(run())
}

func run() int {
	var (
		disks    = flag.String("disks", "", "disks as comma-separated [COUNTx]SIZE[:ro] groups, e.g. 7x2G,1G:ro")
		roLast   = flag.Bool("ro-disk", false, "attach the last disk read-only")
		standard = flag.Bool(
			"standard-layout",
			false,
			"standard test layout: 7x2G read-write + 1G read-only, LVMS_GUEST_* env",
		)
		mem      = flag.Int("mem", 512, "guest memory in MiB")
		timeout  = flag.Duration("timeout", 10*time.Minute, "limit for the whole run")
		dir      = flag.String("dir", "", "working directory of the command in the guest")
		showBoot = flag.Bool("show-boot", false, "also print kernel and init messages")
		noShim   = flag.Bool("no-shim", false, "do not preload the xstate ptrace shim")
		envs     listFlag
		shares   listFlag
	)
	flag.Var(&envs, "env", "K=V added to the command's environment (repeatable)")
	flag.Var(&shares, "share", "host directory mounted read-write at the same path (repeatable)")
	flag.Parse()

	opts := uml.Options{
		Command: flag.Args(), MemoryMiB: *mem, Timeout: *timeout, Dir: *dir,
		Stdout: os.Stdout, ShowBoot: *showBoot, NoShim: *noShim, SharedDirs: shares,
		Env: map[string]string{},
	}
	if len(opts.Command) == 0 {
		fmt.Fprintln(os.Stderr, "umlrun: no command given; usage: umlrun [flags] -- /path/to/cmd args...")
		return 2
	}
	if err := configure(&opts, *standard, *disks, *roLast, envs); err != nil {
		fmt.Fprintln(os.Stderr, "umlrun:", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := uml.Run(ctx, opts)
	if res != nil {
		fmt.Fprintf(os.Stderr, "umlrun: guest timings: boot-to-command %s, command %s, total %s\n",
			res.Boot.Round(time.Millisecond), res.Command.Round(time.Millisecond), res.Total.Round(time.Millisecond))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "umlrun:", err)
		return exitGuestFailed
	}
	return res.ExitCode
}

// configure applies the disk, env and share flags to opts.
func configure(opts *uml.Options, standard bool, disks string, roLast bool, envs []string) error {
	if standard {
		opts.Disks = uml.StandardDisks()
		opts.Env = uml.StandardEnv()
	}
	if disks != "" {
		d, err := parseDisks(disks)
		if err != nil {
			return err
		}
		opts.Disks = d
	}
	if roLast && len(opts.Disks) > 0 {
		opts.Disks[len(opts.Disks)-1].ReadOnly = true
	}
	for _, kv := range envs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("-env %q: want K=V", kv)
		}
		opts.Env[k] = v
	}
	return nil
}

// parseDisks parses "7x2G,1G:ro".
func parseDisks(s string) ([]uml.Disk, error) {
	var out []uml.Disk
	for _, group := range strings.Split(s, ",") {
		spec, ro := strings.CutSuffix(group, ":ro")
		count := 1
		if n, size, ok := strings.Cut(spec, "x"); ok {
			c, err := strconv.Atoi(n)
			if err != nil || c <= 0 {
				return nil, fmt.Errorf("-disks %q: bad count %q", s, n)
			}
			count, spec = c, size
		}
		size, err := uml.ParseSize(spec)
		if err != nil {
			return nil, fmt.Errorf("-disks %q: %w", s, err)
		}
		for range count {
			out = append(out, uml.Disk{Size: size, ReadOnly: ro})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("-disks: no disks")
	}
	return out, nil
}
