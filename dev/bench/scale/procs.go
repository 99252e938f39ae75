package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// Users of the dev cluster (lvms-dev up --user): each component its own, for the audit log.
const (
	userOperator    = "lvms-operator"
	userSim         = "lvms-node-sim"
	userProvisioner = "csi-provisioner"
	userKwok        = "kwok"
)

// ourUsers are the components whose API requests the benchmark reports.
var ourUsers = []string{userOperator, userSim, userProvisioner}

// process is a host process the benchmark started.
type process struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
}

// start runs bin with args and env added, its output in <dir>/<name>.log.
func start(dir, name, bin string, env []string, args ...string) (*process, error) {
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("log of %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return &process{name: name, cmd: cmd, log: log}, nil
}

// stop ends the process group: SIGTERM, then SIGKILL after 10 s.
func (p *process) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	_ = p.log.Close()
}

// alive reports whether the process still runs.
func (p *process) alive() bool {
	return p.cmd.ProcessState == nil && p.cmd.Process.Signal(syscall.Signal(0)) == nil
}

// provisionerArgs returns the csi-provisioner's arguments in the operator's Deployment, for a
// host process: the CSI socket given, no leader election (one replica), CSIStorageCapacity objects
// without an owner (there is no pod to own them), the namespace variable expanded.
func provisionerArgs(manifest, socket, namespace string) ([]string, error) {
	raw, err := os.ReadFile(manifest)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", manifest, err)
	}
	for doc := range strings.SplitSeq(string(raw), "\n---") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name != "csi-provisioner" {
				continue
			}
			var out []string
			for _, a := range c.Args {
				switch {
				case strings.HasPrefix(a, "--csi-address="):
					a = "--csi-address=" + socket
				case strings.HasPrefix(a, "--leader-election"):
					continue
				case strings.HasPrefix(a, "--capacity-ownerref-level="):
					a = "--capacity-ownerref-level=-1"
				}
				out = append(out, strings.ReplaceAll(a, "$(NAMESPACE)", namespace))
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s: no Deployment with a csi-provisioner container", manifest)
}

// writeServingCert writes tls.crt and tls.key for 127.0.0.1 into dir: the operator's webhook
// server needs one to start (the benchmark installs no webhook configuration, so nothing calls it).
func writeServingCert(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cert dir: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lvms-webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return fmt.Errorf("certificate: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("marshal key: %w", err)
	}
	return errors.Join(
		os.WriteFile(
			filepath.Join(dir, "tls.crt"),
			pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			0o600,
		),
		os.WriteFile(
			filepath.Join(dir, "tls.key"),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
			0o600,
		),
	)
}

// freePort returns a free TCP port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startComponents starts kwok, the operator and the csi-provisioner.
func (b *bench) startComponents(ctx context.Context) error {
	o := b.o
	kc := func(user string) string { return filepath.Join(o.stateDir, "kubeconfig-"+user) }
	stages := filepath.Join(b.logs, "kwok-stages.yaml")
	if err := os.WriteFile(stages, []byte(kwokStages), 0o644); err != nil {
		return fmt.Errorf("kwok stages: %w", err)
	}
	var err error
	b.kwok, err = start(b.logs, "kwok", o.kwok, nil,
		"--kubeconfig="+kc(userKwok), "--config="+stages, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-lease-duration-seconds=240", "--server-address=")
	if err != nil {
		return err
	}
	certDir := filepath.Join(b.logs, "webhook-certs")
	if err := writeServingCert(certDir); err != nil {
		return err
	}
	socket := filepath.Join(b.logs, "csi.sock")
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return err
		}
	}
	b.operator, err = start(b.logs, "operator", o.lvms, []string{"KUBECONFIG=" + kc(userOperator)},
		"operator", "--namespace="+o.namespace, "--node-image=ghcr.io/lvm-operator/lvms:scale",
		"--csi-socket="+socket, "--leader-elect=false",
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]),
		fmt.Sprintf("--webhook-port=%d", ports[2]), "--webhook-host=127.0.0.1",
		"--webhook-cert-mode=external", "--webhook-cert-dir="+certDir)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, time.Minute, func() (bool, error) {
		_, err := os.Stat(socket)
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("the operator's CSI socket %s: %w (operator.log)", socket, err)
	}
	args, err := provisionerArgs(o.manifest, socket, o.namespace)
	if err != nil {
		return err
	}
	b.provisionerArgs = args
	b.provisioner, err = start(b.logs, "csi-provisioner", o.provisioner,
		[]string{"NAMESPACE=" + o.namespace, "POD_NAME=csi-provisioner-scale"},
		append(args, "--kubeconfig="+kc(userProvisioner))...)
	return err
}

// waitFor polls cond every 500 ms until it is true, fails, or limit passes.
func waitFor(ctx context.Context, limit time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s: %w", limit, ctx.Err())
		case <-t.C:
		}
	}
}
