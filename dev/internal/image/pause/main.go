// Command pause is the sandbox ("pause") container of the local cluster's pods, built into
// lvms.local/pause:dev by `lvms-dev image build`. As PID 1 of a pod it holds the pod's
// namespaces, reaps the zombies a shared PID namespace leaves to it, and exits on SIGTERM or
// SIGINT.
package main

import (
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

func main() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGCHLD)
	for sig := range sigs {
		if sig != unix.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child; SIGCHLD is not queued, so one signal may stand for several.
func reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
