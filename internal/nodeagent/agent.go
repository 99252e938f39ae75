package nodeagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/mount-utils"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lvm-operator/lvm-operator/internal/controller/logicalvolume"
	"github.com/lvm-operator/lvm-operator/internal/controller/vgmanager"
	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/csi/identity"
	csinode "github.com/lvm-operator/lvm-operator/internal/csi/node"
	"github.com/lvm-operator/lvm-operator/internal/devices"
	"github.com/lvm-operator/lvm-operator/internal/exec"
	"github.com/lvm-operator/lvm-operator/internal/iolimit"
	"github.com/lvm-operator/lvm-operator/internal/lvm"
	"github.com/lvm-operator/lvm-operator/internal/lvmd"
	"github.com/lvm-operator/lvm-operator/internal/snapmeta"
	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
)

// DefaultRefreshInterval is how often the in-process lvmd reads the full LVM state: what only a read
// shows (how full each thin pool's data and metadata are, exported as topolvm_thinpool_*_percent,
// which the pool-full alerts watch) is at most this old. The standalone lvmd keeps
// lvmd.DefaultRefreshInterval.
const DefaultRefreshInterval = time.Minute

// Options configure the node agent.
type Options struct {
	// NodeName is this node; Namespace the operator namespace.
	NodeName, Namespace string
	// ClusterID identifies the cluster (the UID of its kube-system namespace). With NodeName it
	// tags every VG and LV the agent creates, and a VG tagged for another node or cluster is never
	// touched; empty leaves the cluster out of the tags and the check.
	ClusterID string
	// Executor runs host commands (with the nsenter prefix in production).
	Executor exec.Executor
	// HostFS is the host's root filesystem as seen by the agent (sysfs, /proc/<pid>/mountinfo);
	// nil means os.DirFS("/").
	HostFS fs.FS
	// MountInfo is the mountinfo path inside HostFS; "proc/1/mountinfo" with host PID.
	MountInfo string
	// LVMConfDir is the host's /etc/lvm inside HostFS ("proc/1/root/etc/lvm" with host PID, as
	// devices.NewLoopFilter reads it); empty means "etc/lvm".
	LVMConfDir string
	// Mounter mounts volumes; nil means mount.New("").
	Mounter mount.Interface
	// CSIEndpoint is where the CSI Identity and Node services listen (unix://path or a path).
	CSIEndpoint string
	// RegistrationSocket serves kubelet plugin registration; empty disables it (a
	// node-driver-registrar sidecar, or a test).
	RegistrationSocket string
	// KubeletCSIEndpoint is the CSI socket path as kubelet sees it (for registration).
	KubeletCSIEndpoint string
	// RegistrationWait holds the registration back, for at most this long, until the Node carries
	// the capacity of every device class of the node (CapacityPublished; DefaultRegistrationWait in
	// production); 0 registers at once. Only with the volume-group manager.
	RegistrationWait time.Duration
	// LVMDSocket is the unix socket of an lvmd running outside the agent (`lvms lvmd`, TopoLVM's
	// "lvmd as a systemd service"): the agent uses it instead of its own lvmd and runs no
	// volume-group manager (the external lvmd's configuration names the volume groups). Empty runs
	// lvmd in process.
	LVMDSocket string
	// StaticConfig replaces the volume-group manager with fixed device classes (volume groups
	// made by someone else, as with a standalone lvmd); nil runs the volume-group manager.
	StaticConfig *lvmd.Config
	// RefreshInterval of lvmd's full state read; 0 means DefaultRefreshInterval.
	RefreshInterval time.Duration
	// KubeletDir is the kubelet's root directory; CSI target paths must lie below it (empty means
	// /var/lib/kubelet).
	KubeletDir string
	// CgroupRoot is where the host's cgroup v2 hierarchy is seen (iolimit.DefaultCgroupRoot when
	// empty): the IO caps of volumes (VolumeAttributesClass) go into their pods' cgroups there.
	CgroupRoot string
	// SnapshotMetadataAddress is where the node's CSI SnapshotMetadata endpoint (changed block
	// tracking of thin classes, for the operator's proxy) listens, with mutual TLS from the files
	// in SnapshotMetadataCertDir (snapmeta.ServerTLS). Empty serves none. Needs lvmd in process.
	SnapshotMetadataAddress, SnapshotMetadataCertDir string
	// TransferAddress is where the node's Transfer service listens (host:port): other nodes' agents
	// copy this node's volumes from it, with mutual TLS of the operator's transfer CA. Empty serves
	// none and copies nothing from other nodes. Needs lvmd in process.
	TransferAddress string
	// TransferBandwidth limits the bytes per second this node's agent writes while copying from
	// other nodes (all copies together); 0 is no limit.
	TransferBandwidth int64

	// lvmConfig is what every lvm2 command of the agent runs with: the filter of the kubelet's
	// loop devices (set by Setup).
	lvmConfig lvm.ConfigFunc
}

// Agent is an assembled node agent.
type Agent struct {
	// LVMD is the in-process LVM service (nil with an external lvmd).
	LVMD *lvmd.Service
	// Classes holds the live device classes (nil with an external lvmd).
	Classes *lvmd.DeviceClassManager
	// Remote is the client of the external lvmd (nil when lvmd runs in process).
	Remote *RemoteLVMD
}

// Setup adds every part of the node agent to mgr.
func Setup(mgr ctrl.Manager, o Options) (*Agent, error) {
	if o.NodeName == "" || o.Executor == nil || o.CSIEndpoint == "" {
		return nil, errors.New("node agent: NodeName, Executor and CSIEndpoint are required")
	}
	if o.HostFS == nil {
		o.HostFS = os.DirFS("/")
	}
	o.Executor = hostMetrics.Instrument(o.Executor)
	o.lvmConfig = devices.NewLoopFilter(o.Executor, o.HostFS, cmp.Or(o.LVMConfDir, "etc/lvm")).Config
	a, be, err := setupLVMD(mgr, o)
	if err != nil {
		return nil, err
	}
	var ready func(context.Context) (bool, error)
	if o.StaticConfig == nil && o.LVMDSocket == "" {
		vgm, err := setupVGManager(mgr, o, a.Classes, a.LVMD.MarkStale)
		if err != nil {
			return nil, err
		}
		ready = CapacityPublished(mgr.GetClient(), o.NodeName, vgm.Classes)
	}
	fetch, err := setupTransfer(mgr, o, a)
	if err != nil {
		return nil, err
	}
	limiter := NewIOLimiter(&iolimit.Host{CgroupRoot: o.CgroupRoot, KubeletDir: o.KubeletDir},
		mgr.GetClient(), o.NodeName)
	lvr, err := logicalvolume.New(logicalvolume.Options{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), NodeName: o.NodeName, LVM: be, Fetcher: fetch,
		IOLimiter: limiter,
	})
	if err != nil {
		return nil, fmt.Errorf("LogicalVolume reconciler: %w", err)
	}
	if err := lvr.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("set up LogicalVolume reconciler: %w", err)
	}
	if err := setupCSI(mgr, o, be, ready, limiter); err != nil {
		return nil, err
	}
	if err := setupSnapshotMetadata(mgr, o, a); err != nil {
		return nil, err
	}
	return a, setupReporting(mgr, o, be)
}

// setupSnapshotMetadata adds the node's SnapshotMetadata endpoint when an address is given: the
// snapshots' LVs come from the in-process lvmd, their block maps from the thin pools' metadata.
func setupSnapshotMetadata(mgr ctrl.Manager, o Options, a *Agent) error {
	if o.SnapshotMetadataAddress == "" {
		return nil
	}
	if a.LVMD == nil || o.SnapshotMetadataCertDir == "" {
		return errors.New(
			"node agent: the snapshot metadata endpoint needs lvmd in process and a certificate directory",
		)
	}
	reader := thinmeta.New(o.Executor, thinmeta.WithLVMConfig(o.lvmConfig))
	ep, err := snapmeta.NewEndpoint(snapmeta.EndpointOptions{
		Addr: o.SnapshotMetadataAddress, CertDir: o.SnapshotMetadataCertDir,
		Node: snapmeta.NewNode(NewVolumes(a.LVMD), reader), Classes: a.Classes, Recover: reader,
		Log: ctrl.Log.WithName("snapshot-metadata"),
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(ep); err != nil {
		return fmt.Errorf("add snapshot metadata endpoint: %w", err)
	}
	return nil
}

// backend is what the agent's parts need of lvmd: *lvmd.Service in process, RemoteLVMD (through
// remoteBackend) for an external one.
type backend interface {
	logicalvolume.LVM
	LVSource
	LVLister
	CapacityWatcher
}

// remoteBackend gives RemoteLVMD the Watch of CapacityWatcher (its embedded client's Watch takes a
// callback).
type remoteBackend struct{ *RemoteLVMD }

// Watch implements CapacityWatcher with RemoteLVMD's one shared stream.
func (b remoteBackend) Watch(ctx context.Context) <-chan []lvmd.Capacity { return b.Subscribe(ctx) }

// setupLVMD adds lvmd to mgr: in process (the device classes come from the volume-group manager or
// StaticConfig), or the client of the external lvmd at LVMDSocket.
func setupLVMD(mgr ctrl.Manager, o Options) (*Agent, backend, error) {
	if o.LVMDSocket != "" {
		if o.StaticConfig != nil {
			return nil, nil, errors.New("node agent: an external lvmd (LVMDSocket) has its own device classes; " +
				"StaticConfig must be empty")
		}
		c, err := lvmd.Dial(o.LVMDSocket)
		if err != nil {
			return nil, nil, fmt.Errorf("external lvmd: %w", err)
		}
		r := NewRemoteLVMD(c, ctrl.Log.WithName("lvmd-client"))
		if err := mgr.Add(r); err != nil {
			return nil, nil, fmt.Errorf("add external lvmd client: %w", err)
		}
		return &Agent{Remote: r}, remoteBackend{RemoteLVMD: r}, nil
	}
	classes, err := lvmd.NewDeviceClassManager(o.StaticConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("device classes: %w", err)
	}
	svc, err := lvmd.NewService(
		lvmd.Options{
			Executor: o.Executor, LVMConfig: o.lvmConfig, Classes: classes,
			RefreshInterval: cmp.Or(o.RefreshInterval, DefaultRefreshInterval),
			Identity:        lvm.Identity{Node: o.NodeName, Cluster: o.ClusterID},
		},
	)
	if err != nil {
		return nil, nil, fmt.Errorf("lvmd: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(svc.Run)); err != nil {
		return nil, nil, fmt.Errorf("add lvmd: %w", err)
	}
	return &Agent{LVMD: svc, Classes: classes}, svc, nil
}

func setupVGManager(
	mgr ctrl.Manager, o Options, classes *lvmd.DeviceClassManager, stateChanged func(),
) (*vgmanager.Reconciler, error) {
	var devOpts []devices.Option
	if o.MountInfo != "" {
		devOpts = append(devOpts, devices.WithMountInfo(o.MountInfo))
	}
	vgm := vgmanager.New(vgmanager.Options{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("lvms-node"),
		Disks:     devices.NewHost(o.Executor, o.HostFS, devOpts...),
		LVM:       lvm.New(o.Executor).WithConfig(o.lvmConfig),
		Sink:      classes,
		// The classes are fed after every reconcile but change rarely; a changed volume group
		// must reach lvmd's cache even when its class did not change.
		StateChanged: stateChanged,
		NodeName:     o.NodeName,
		ClusterID:    o.ClusterID,
		Namespace:    o.Namespace,
	})
	if err := vgm.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("set up volume-group manager: %w", err)
	}
	return vgm, nil
}

// setupCSI adds the CSI node service and the kubelet plugin registration, held back by ready (nil
// registers at once).
func setupCSI(
	mgr ctrl.Manager, o Options, svc backend, ready func(context.Context) (bool, error), limiter *IOLimiter,
) error {
	mounter := o.Mounter
	if mounter == nil {
		mounter = mount.New("")
	}
	nodeSrv, err := csinode.New(csinode.Options{
		NodeName: o.NodeName, Volumes: NewVolumes(svc), Mounter: mounter, Exec: o.Executor,
		KubeletDir: o.KubeletDir, Limiter: limiter,
	})
	if err != nil {
		return fmt.Errorf("CSI node service: %w", err)
	}
	ident := identity.New(nil)
	srv, err := lvmcsi.NewServer(o.CSIEndpoint, ctrl.Log.WithName("csi"))
	if err != nil {
		return fmt.Errorf("CSI server: %w", err)
	}
	csi.RegisterIdentityServer(srv.GRPC, ident)
	csi.RegisterNodeServer(srv.GRPC, nodeSrv)
	if err := mgr.Add(srv); err != nil {
		return fmt.Errorf("add CSI server: %w", err)
	}
	if err := mgr.AddHealthzCheck("csi", ProbeCheck(ident, 0)); err != nil {
		return fmt.Errorf("add CSI health check: %w", err)
	}
	if o.RegistrationSocket == "" {
		return nil
	}
	reg := NewRegistration(RegistrationOptions{
		SocketPath: o.RegistrationSocket, Endpoint: o.KubeletCSIEndpoint, Ready: ready, Wait: o.RegistrationWait,
	})
	if err := mgr.Add(reg); err != nil {
		return fmt.Errorf("add plugin registration: %w", err)
	}
	return nil
}

// hostMetrics records the commands of every node agent of the process (one in production; tests
// set up several); registerOnce registers it.
var (
	hostMetrics  = exec.NewMetrics()
	registerOnce sync.Once
)

func setupReporting(mgr ctrl.Manager, o Options, svc backend) error {
	var regErr error
	registerOnce.Do(func() {
		for _, c := range append(hostMetrics.Collectors(), logicalvolume.TransferCollectors()...) {
			regErr = errors.Join(regErr, metrics.Registry.Register(c))
		}
	})
	if regErr != nil {
		return fmt.Errorf("register host command metrics: %w", regErr)
	}
	ann, err := NewCapacityAnnotator(CapacityAnnotatorOptions{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), NodeName: o.NodeName, Capacities: svc,
	})
	if err != nil {
		return fmt.Errorf("capacity annotations: %w", err)
	}
	m := NewMetrics(o.NodeName, svc)
	if err := m.Register(metrics.Registry); err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	orphans, err := NewOrphanReporter(OrphanReporterOptions{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("lvms-node"), LVs: svc, NodeName: o.NodeName,
	})
	if err != nil {
		return err
	}
	if err := metrics.Registry.Register(orphans); err != nil {
		return fmt.Errorf("register orphan LV metric: %w", err)
	}
	for _, r := range []manager.Runnable{ann, m, orphans} {
		if err := mgr.Add(r); err != nil {
			return fmt.Errorf("add %T: %w", r, err)
		}
	}
	return nil
}
