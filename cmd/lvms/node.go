package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
	csinode "github.com/lvm-operator/lvm-operator/internal/csi/node"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/iolimit"
	"github.com/lvm-operator/lvm-operator/internal/nodeagent"
	"github.com/lvm-operator/lvm-operator/internal/tlsprofile"
)

// nodeFlags are the settings of `lvms node`.
type nodeFlags struct {
	tls                    tlsprofile.Flags
	nodeName, namespace    string
	clusterID              string
	csiSocket, kubeletCSI  string
	registrationSocket     string
	registrationWait       time.Duration
	kubeletDir             string
	cgroupRoot             string
	lvmdSocket             string
	nsenter                bool
	commandTimeout         time.Duration
	metricsAddr, probeAddr string
	metricsCertDir         string
	profiling              bool
	snapMetaAddr           string
	snapMetaCertDir        string
	transferAddr           string
	transferBandwidth      string
	log                    *zap.Options
}

func newNodeCommand() *cobra.Command {
	f := nodeFlags{}
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run the node agent: volume groups, lvmd, LogicalVolumes and the CSI node service",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runNode(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.nodeName, "node-name", envOr("NODE_NAME", ""), "name of this node (required)")
	fl.StringVar(&f.namespace, "namespace", envOr("POD_NAMESPACE", "lvms-system"), "operator namespace")
	fl.StringVar(&f.clusterID, "cluster-id", "",
		"identity of the cluster (the operator passes the UID of kube-system); with the node name it tags "+
			"every VG and LV, and a VG tagged for another node or cluster is never touched")
	fl.StringVar(&f.csiSocket, "csi-socket", "/run/topolvm/csi-topolvm.sock", "CSI Identity+Node socket")
	fl.StringVar(&f.kubeletCSI, "kubelet-csi-socket", "/var/lib/kubelet/plugins/topolvm.io/node/csi-topolvm.sock",
		"the CSI socket's path as kubelet sees it")
	fl.StringVar(&f.registrationSocket, "registration-socket", "/var/lib/kubelet/plugins_registry/topolvm.io-reg.sock",
		"kubelet plugin registration socket; empty when a node-driver-registrar sidecar registers instead")
	fl.DurationVar(&f.registrationWait, "registration-wait", nodeagent.DefaultRegistrationWait,
		"register with the kubelet once the Node carries the capacity of each of its device classes, or after "+
			"this long at most, so that the first CSIStorageCapacity of a new node is not zero (0: at once)")
	fl.StringVar(&f.kubeletDir, "kubelet-dir", csinode.DefaultKubeletDir,
		"the kubelet's root directory; CSI target paths outside it are refused")
	fl.StringVar(&f.cgroupRoot, "cgroup-root", "",
		"where the host's cgroup v2 hierarchy is seen, for the IO caps of volumes (io.max in their pods' cgroups); "+
			"empty: /proc/1/root/sys/fs/cgroup with --nsenter (host PID), else /sys/fs/cgroup")
	fl.StringVar(&f.lvmdSocket, "lvmd-socket", "",
		"use the lvmd serving on this unix socket (`lvms lvmd`, run as a service of the host) instead of one in "+
			"process; its configuration names the volume groups, so no volume-group manager runs (empty: in process)")
	fl.BoolVar(&f.nsenter, "nsenter", true, "run host commands through nsenter into PID 1's namespaces (needs hostPID)")
	fl.DurationVar(&f.commandTimeout, "command-timeout", exec.DefaultTimeout,
		"deadline of each host command (lvm, blkid, wipefs, mkfs, ...); its process group is killed after it")
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443",
		"metrics address, HTTPS with Kubernetes authentication and authorization (0 disables)")
	fl.StringVar(&f.metricsCertDir, "metrics-cert-dir", "",
		"directory with tls.crt and tls.key for the metrics server (default: a self-signed certificate)")
	fl.BoolVar(&f.profiling, profilingFlag, os.Getenv(profilingEnv) == "true", profilingUsage)
	f.tls.AddFlags(fl)
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":9808", "health probe address (/healthz)")
	fl.StringVar(&f.snapMetaAddr, "snapshot-metadata-address", "",
		"address of the node's CSI SnapshotMetadata endpoint (changed block tracking of thin classes, "+
			"called by `lvms snapshot-metadata` with mutual TLS); empty serves none")
	fl.StringVar(&f.snapMetaCertDir, "snapshot-metadata-cert-dir", "",
		"with --snapshot-metadata-address: directory with tls.crt and tls.key (serving) and ca.crt "+
			"(the CA of the clients allowed)")
	fl.StringVar(&f.transferAddr, "transfer-address", "",
		"address of the node's Transfer service, from which other nodes' agents copy this node's volumes "+
			"(restores across nodes; mutual TLS with certificates the operator signs per node); empty serves "+
			"none and copies nothing from other nodes")
	fl.StringVar(&f.transferBandwidth, "transfer-bandwidth", "0",
		"bytes per second this node writes while copying volumes from other nodes, all copies together "+
			"(a quantity: 100Mi; 0 is no limit)")
	f.log = addLogFlags(fl)
	return cmd
}

func runNode(cmd *cobra.Command, f nodeFlags) error {
	if f.nodeName == "" {
		return errors.New("--node-name (or NODE_NAME) is required")
	}
	bandwidth, err := resource.ParseQuantity(f.transferBandwidth)
	if err != nil || bandwidth.Sign() < 0 {
		return fmt.Errorf("--transfer-bandwidth %q: a non-negative quantity of bytes per second (100Mi)",
			f.transferBandwidth)
	}
	setLogger(f.log, "node")
	scheme, err := operatorScheme()
	if err != nil {
		return err
	}
	policy, err := f.tls.Parse()
	if err != nil {
		return err
	}
	metrics, err := metricsOptions(f.metricsAddr, f.metricsCertDir, f.profiling, policy)
	if err != nil {
		return err
	}
	cfg := ctrl.GetConfigOrDie()
	cacheOpts, err := nodeCache(cmd.Context(), cfg, scheme, f.namespace, f.nodeName)
	if err != nil {
		return err
	}
	// On SIGTERM the reconcilers stop taking work and the host commands they started run to their
	// end (WithFinishOnCancel below), for up to one command's deadline and a margin; the DaemonSet's
	// terminationGracePeriodSeconds (lvmcluster.NodeTerminationGracePeriodSeconds) allows as much.
	shutdown := f.commandTimeout + 15*time.Second
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metrics,
		HealthProbeBindAddress:  f.probeAddr,
		Cache:                   cacheOpts,
		GracefulShutdownTimeout: &shutdown,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	hostOpts := []exec.HostOption{exec.WithTimeout(f.commandTimeout), exec.WithFinishOnCancel()}
	mountInfo, cgroupRoot := "", f.cgroupRoot // empty: iolimit.DefaultCgroupRoot
	if f.nsenter {
		hostOpts = append(hostOpts, exec.WithPrefix(exec.NSEnterPrefix()...))
		mountInfo = "proc/1/mountinfo"
		// The container's own /sys/fs/cgroup shows only its cgroup namespace; host PID 1's root
		// shows the host's hierarchy, where the pods' cgroups are.
		cgroupRoot = cmp.Or(f.cgroupRoot, "/proc/1/root"+iolimit.DefaultCgroupRoot)
	}
	if _, err := nodeagent.Setup(mgr, nodeagent.Options{
		NodeName:                f.nodeName,
		Namespace:               f.namespace,
		Executor:                exec.NewHost(hostOpts...),
		MountInfo:               mountInfo,
		LVMConfDir:              hostLVMConfDir(f.nsenter),
		CSIEndpoint:             f.csiSocket,
		RegistrationSocket:      f.registrationSocket,
		KubeletCSIEndpoint:      f.kubeletCSI,
		RegistrationWait:        f.registrationWait,
		LVMDSocket:              f.lvmdSocket,
		KubeletDir:              f.kubeletDir,
		CgroupRoot:              cgroupRoot,
		ClusterID:               f.clusterID,
		SnapshotMetadataAddress: f.snapMetaAddr,
		SnapshotMetadataCertDir: f.snapMetaCertDir,
		TransferAddress:         f.transferAddr,
		TransferBandwidth:       bandwidth.Value(),
	}); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add ready check: %w", err)
	}
	return mgr.Start(cmd.Context())
}

// nodeCache is the node agent's cache: namespacedCache with only this node's Node and
// LVMVolumeGroupNodeStatus (ownObjectsOnly), and of the LogicalVolumes only the node's own where the API server can select them by node (nodeagent.LogicalVolumesOfNode). The probe's
// client knows the one kind it lists: a discovering mapper would first read the API server's
// discovery, before the agent serves its health endpoint.
func nodeCache(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, namespace, node string) (
	cache.Options, error,
) {
	opts := ownObjectsOnly(namespacedCache(namespace), namespace, node)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(topolvmv1.GroupVersion.WithKind("LogicalVolume"), meta.RESTScopeRoot)
	direct, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		return opts, fmt.Errorf("client: %w", err)
	}
	by, ok, err := nodeagent.LogicalVolumesOfNode(ctx, direct, node)
	if err != nil {
		return opts, err
	}
	if !ok {
		ctrl.Log.Info("The API server cannot select LogicalVolumes by " + nodeagent.NodeNameField +
			" (Kubernetes before 1.31, or the CRD without selectableFields): caching every LogicalVolume of the cluster")
		return opts, nil
	}
	opts.ByObject[&topolvmv1.LogicalVolume{}] = by
	return opts, nil
}

// ownObjectsOnly restricts the cache's Nodes and LVMVolumeGroupNodeStatuses to node's own, the only
// ones the agent reads. Each agent held every Node and every node status of the cluster before: N
// copies of N objects on N nodes, and every node's heartbeat and status update sent to every agent
// (docs/performance.md, the scale benchmark).
func ownObjectsOnly(opts cache.Options, namespace, node string) cache.Options {
	own := fields.OneTermEqualSelector("metadata.name", node)
	setByObject(opts, &corev1.Node{}, cache.ByObject{Field: own})
	setByObject(opts, &lvmv1alpha1.LVMVolumeGroupNodeStatus{}, cache.ByObject{
		Namespaces: map[string]cache.Config{namespace: {}}, Field: own,
	})
	return opts
}

// setByObject sets the cache options of obj's kind, replacing those set under another object of
// the same kind: ByObject is keyed by pointer, and two keys of one kind make the cache pick either.
func setByObject(opts cache.Options, obj client.Object, by cache.ByObject) {
	for k := range opts.ByObject {
		if reflect.TypeOf(k) == reflect.TypeOf(obj) {
			delete(opts.ByObject, k)
		}
	}
	opts.ByObject[obj] = by
}
