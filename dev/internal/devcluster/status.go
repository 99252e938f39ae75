package devcluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// Status reports on out what of the cluster in stateDir is running: the supervisor, each host
// process, each guest and each listener. It returns whether nothing is left.
func Status(stateDir string, out io.Writer) (clean bool, err error) {
	l, err := NewLayout(stateDir)
	if err != nil {
		return false, err
	}
	var st State
	if err := readJSON(l.State(), &st); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	up := 0
	report := func(kind, name string, alive bool, detail string) {
		state := "down"
		if alive {
			state = "UP"
			up++
		}
		fmt.Fprintf(out, "%-10s %-28s %-4s %s\n", kind, name, state, detail)
	}
	pid, _ := readPID(l.PIDFile("supervisor"))
	report("process", "supervisor", aliveUnder(pid, l.Dir), pidDetail(pid))
	names := slices.Clone(st.Components)
	files, _ := filepath.Glob(filepath.Join(l.Run(), "*.pid"))
	for _, f := range files {
		if n := trimPID(f); n != "supervisor" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range names {
		pid, _ := readPID(l.PIDFile(n))
		report("process", n, aliveUnder(pid, l.Dir), pidDetail(pid))
	}
	guestFiles, _ := filepath.Glob(filepath.Join(l.Guests(), "*", "uml", "*", "pid"))
	for _, f := range guestFiles {
		pid, _ := readPID(f)
		report("guest", filepath.Base(filepath.Dir(f)), aliveUnder(pid, l.Dir), pidDetail(pid))
	}
	ports := make([]string, 0, len(st.Ports))
	for n := range st.Ports {
		ports = append(ports, n)
	}
	slices.Sort(ports)
	for _, n := range ports {
		report("listener", n, listening(st.Ports[n]), fmt.Sprintf("127.0.0.1:%d", st.Ports[n]))
	}
	if up == 0 {
		fmt.Fprintf(out, "nothing is left of the dev cluster in %s\n", l.Dir)
		return true, nil
	}
	_, readyErr := os.Stat(l.Ready())
	fmt.Fprintf(out, "%d up; cluster ready: %t; export KUBECONFIG=%s\n", up, readyErr == nil, l.Kubeconfig())
	return false, nil
}

func pidDetail(pid int) string {
	if pid == 0 {
		return ""
	}
	return fmt.Sprintf("pid %d", pid)
}

func trimPID(f string) string { return filepath.Base(f[:len(f)-len(".pid")]) }
