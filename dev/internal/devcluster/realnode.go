package devcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Guest-side constants of a node (the real kubelet with containerd and crun,
// hack/uml/real-node.sh).
const (
	// kubeletPort is the kubelet's HTTPS port inside every guest (one per guest, so they never
	// collide; the egress proxy tells the nodes apart by their node IP).
	kubeletPort = 10250
	// SandboxImage is the pod sandbox ("pause") image containerd uses; it is imported, never
	// pulled.
	SandboxImage = "lvms.local/pause:dev"
)

// Files in a node's directory (Layout.NodeDir).
const (
	nodeKubeletConfig    = "kubelet.yaml"
	nodeContainerdConfig = "containerd.toml"
	nodeCNIDir           = "cni"
)

// kubeletConfig is the KubeletConfiguration of a node. The facts behind it (PROVING-GROUND
// §D): containerd 1.6 has no CRI RuntimeConfig, so the cgroup driver is set here (cgroupfs, no
// systemd in the guest); imported images must never be garbage collected (there is no registry
// to pull them from again); the guest's state lives on tmpfs, whose usage cAdvisor cannot
// attribute, so local-storage isolation and disk-based eviction are off. Every system call
// costs a ptrace round trip under UML, so periodic work is thinned out: node status every 20 s
// (the Lease still renews every 10 s), no volume usage stats (real-node.sh also sets cAdvisor's
// housekeeping to 60 s), and no eviction manager (no thresholds: it would otherwise collect node
// stats every 10 s; a guest short of memory meets its own OOM killer instead). Pods are re-synced
// every minute, the kubelet's default: the 15 s used until 2026-11-29 served a Secret volume (the
// operator's webhook certificate) that the operator no longer waits for, and the kubelet was the
// largest user of a node's one CPU (23 % over 46 min of the e2e at b041dfc, containerd 14 %).
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 0.0.0.0
port: %[1]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[2]s}
authorization:
  mode: Webhook
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
resolvConf: /run/lvms-node/resolv.conf
podCIDR: %[3]s
clusterDomain: cluster.local
localStorageCapacityIsolation: false
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
enforceNodeAllocatable: [pods]
maxPods: %[4]d
shutdownGracePeriod: 0s
nodeStatusUpdateFrequency: 20s
volumeStatsAggPeriod: 0s
`

// containerdConfig runs pods with crun (each exec of a big binary costs about a second under
// UML's ptrace; crun starts pods 2.4× faster than runc) and the CNI bridge below. The shim
// timeouts are raised from containerd's 2–5 s: under UML a shim's state query and its cleanup
// binary often take longer, and each expiry turned into "context deadline exceeded", a killed
// cleanup and a 10 s backoff before the sandbox was torn down (measured: pods on a busy node
// reached Succeeded 15 s after their container ended).
const containerdConfig = `version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[timeouts]
  "io.containerd.timeout.shim.cleanup" = "60s"
  "io.containerd.timeout.shim.load" = "60s"
  "io.containerd.timeout.shim.shutdown" = "60s"
  "io.containerd.timeout.task.state" = "60s"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[1]s"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "crun"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun.options]
        BinaryName = "/usr/bin/crun"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "%[2]s"
`

// cniConfig is the pod network of one node: a bridge with the node as gateway and host-local
// addresses from the node's pod CIDR; the default route lets pods reach the API server's
// Service address, which the guest DNATs to its bridged apiserver port.
const cniConfig = `{
  "cniVersion": "0.4.0",
  "name": "lvms-dev",
  "plugins": [{
    "type": "bridge",
    "bridge": "cni0",
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": "%s"}]],
      "routes": [{"dst": "0.0.0.0/0"}]
    }
  }]
}
`

// writeRealNodeFiles writes node i's kubelet, containerd and CNI configuration into its node
// directory (its kubeconfig is written with the PKI); the kubelet runs at most maxPods pods.
func writeRealNodeFiles(l Layout, i int, node string, maxPods int) error {
	dir := l.NodeDir(node)
	if err := os.MkdirAll(filepath.Join(dir, nodeCNIDir), 0o755); err != nil {
		return fmt.Errorf("create node dir: %w", err)
	}
	files := map[string]string{
		nodeKubeletConfig: fmt.Sprintf(
			kubeletConfig,
			kubeletPort,
			filepath.Join(l.PKI(), caCertFile),
			podCIDR(i),
			maxPods,
		),
		nodeContainerdConfig: fmt.Sprintf(
			containerdConfig,
			SandboxImage,
			filepath.Join(dir, nodeCNIDir),
		),
		filepath.Join(nodeCNIDir, "10-lvms-dev.conflist"): fmt.Sprintf(cniConfig, podCIDR(i)),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("write %s of %s: %w", name, node, err)
		}
	}
	return nil
}

// realNodeEnv is the environment of hack/uml/real-node.sh for node i.
func (c *cluster) realNodeEnv(i int, node, prefix string) map[string]string {
	return map[string]string{
		"NODE_NAME": node, "NODE_IP": nodeIP(i).String(), "POD_CIDR": podCIDR(i).String(),
		"NODE_DIR": c.l.NodeDir(node), "LOG_DIR": c.l.Logs(), "LOG_PREFIX": prefix,
		"KUBELET": c.kube("kubelet"), "GUESTBRIDGE": c.cfg.GuestBridge,
		"API_TARGET": "127.0.0.1:" + c.port(portAPIServer), "API_PORT": fmt.Sprint(GuestAPIPort),
		"LINK_ADDR": linkPrefix(i).String(), "LINK_ROUTES": c.linkRoutes(i),
		"IMAGES": strings.Join(c.cfg.Images, ":"),
	}
}

// prepareRealNodes writes every node's configuration and the apiserver's egress
// configuration, and starts the egress proxy the apiserver will use and the network between the
// nodes.
func (c *cluster) prepareRealNodes() error {
	return c.step("node configs, egress proxy", func() error {
		for i := range c.cfg.Nodes {
			if err := writeRealNodeFiles(c.l, i, nodeName(i), c.cfg.MaxPods); err != nil {
				return err
			}
		}
		body := fmt.Sprintf(egressConfig, c.l.EgressSocket())
		if err := os.WriteFile(c.egressConfigFile(), []byte(body), 0o644); err != nil {
			return fmt.Errorf("write egress configuration: %w", err)
		}
		logFile, err := os.OpenFile(c.l.Log("egress-proxy"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open egress proxy log: %w", err)
		}
		// The proxy's logger keeps writing to the file until the supervisor exits.
		if c.egress, err = startEgressProxy(c.l.EgressSocket(), logFile); err != nil {
			return err
		}
		c.nodeNet, err = startNodeNet(c.l)
		return err
	})
}

func (c *cluster) egressConfigFile() string { return filepath.Join(c.l.Dir, "egress-selector.yaml") }

// realAPIServerArgs are the apiserver flags the nodes need: the egress proxy for everything it
// sends into the cluster, a client certificate for the kubelets, node addresses by InternalIP,
// and webhook/aggregated API calls to endpoint (pod) addresses instead of Service IPs, which
// exist in no guest (there is no kube-proxy).
func (c *cluster) realAPIServerArgs() []string {
	return []string{
		"--egress-selector-config-file=" + c.egressConfigFile(),
		"--kubelet-client-certificate=" + c.pki(adminCertFile), "--kubelet-client-key=" + c.pki(adminKeyFile),
		"--kubelet-preferred-address-types=InternalIP", "--enable-aggregator-routing=true",
	}
}
