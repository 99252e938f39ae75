package devcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DefaultStateDir is ${XDG_CACHE_HOME:-$HOME/.cache}/lvms/dev-cluster.
func DefaultStateDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate cache dir: %w", err)
	}
	return filepath.Join(base, "lvms", "dev-cluster"), nil
}

// Layout names the files under a dev cluster's state directory.
type Layout struct {
	// Dir is the state directory (absolute).
	Dir string
}

// NewLayout returns the layout of the state directory dir, made absolute.
func NewLayout(dir string) (Layout, error) {
	if dir == "" {
		return Layout{}, errors.New("empty state directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Layout{}, fmt.Errorf("state directory %s: %w", dir, err)
	}
	return Layout{Dir: abs}, nil
}

// Config is the cluster configuration up writes for the supervisor.
func (l Layout) Config() string { return filepath.Join(l.Dir, "config.json") }

// State is what the supervisor records about the running cluster (ports, components).
func (l Layout) State() string { return filepath.Join(l.Dir, "state.json") }

// Ready exists once the cluster is usable.
func (l Layout) Ready() string { return filepath.Join(l.Dir, "ready") }

// Failed holds the supervisor's startup error.
func (l Layout) Failed() string { return filepath.Join(l.Dir, "failed") }

// Kubeconfig is the admin kubeconfig for the host.
func (l Layout) Kubeconfig() string { return filepath.Join(l.Dir, "kubeconfig") }

// UserKubeconfig is the kubeconfig of one of UpOptions.Users.
func (l Layout) UserKubeconfig(user string) string { return filepath.Join(l.Dir, "kubeconfig-"+user) }

// PKI holds certificates and keys.
func (l Layout) PKI() string { return filepath.Join(l.Dir, "pki") }

// Logs holds one log per component; guests write theirs here too (shared read-write).
func (l Layout) Logs() string { return filepath.Join(l.Dir, "logs") }

// Log is the log file of a component.
func (l Layout) Log(component string) string { return filepath.Join(l.Logs(), component+".log") }

// Run holds pid files.
func (l Layout) Run() string { return filepath.Join(l.Dir, "run") }

// PIDFile is the pid file of a component ("supervisor" for the supervisor).
func (l Layout) PIDFile(component string) string { return filepath.Join(l.Run(), component+".pid") }

// Bin holds the binaries built by up.
func (l Layout) Bin() string { return filepath.Join(l.Dir, "bin") }

// Etcd is etcd's data directory.
func (l Layout) Etcd() string { return filepath.Join(l.Dir, "etcd") }

// Guests holds one run directory per guest (sparse disks, UML's pid file under uml/).
func (l Layout) Guests() string { return filepath.Join(l.Dir, "guests") }

// Manifests holds generated manifests applied at startup (the product overlay).
func (l Layout) Manifests() string { return filepath.Join(l.Dir, "manifests") }

// Nodes holds one directory per node: its kubelet kubeconfig, kubelet, containerd and CNI
// configuration, written before the guest boots (the guest reads them through its read-only
// view of the host).
func (l Layout) Nodes() string { return filepath.Join(l.Dir, "nodes") }

// NodeDir is the configuration directory of a node.
func (l Layout) NodeDir(node string) string { return filepath.Join(l.Nodes(), node) }

// EgressSocket is the apiserver's egress proxy to the nodes (HTTP CONNECT).
func (l Layout) EgressSocket() string { return filepath.Join(l.Dir, "egress.sock") }

// NodeNetSocket is the control socket of the Ethernet switch between the nodes (umlswitch).
func (l Layout) NodeNetSocket() string { return filepath.Join(l.Dir, "nodenet.ctl") }
