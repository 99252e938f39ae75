package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/lvm-operator/lvm-operator/internal/controller/logicalvolume"
	"github.com/lvm-operator/lvm-operator/internal/thinmeta"
	"github.com/lvm-operator/lvm-operator/internal/transfer"
	transferpb "github.com/lvm-operator/lvm-operator/internal/transfer/proto"
)

// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get;create
// +kubebuilder:rbac:groups="",namespace=lvms-system,resources=configmaps,resourceNames=lvms-transfer-trust,verbs=get

// setupTransfer adds the node's side of copies between nodes when o.TransferAddress is set: its
// identity (a key and the operator's certificate for this node), the Transfer service that serves
// this node's LVs to other nodes' agents, and the Fetcher the LogicalVolume reconciler copies with.
// It returns nil without an address.
func setupTransfer(mgr ctrl.Manager, o Options, a *Agent) (logicalvolume.Fetcher, error) {
	if o.TransferAddress == "" {
		return nil, nil
	}
	if a.LVMD == nil {
		return nil, errors.New("node agent: transfers between nodes need lvmd in process")
	}
	// The agent watches neither CertificateSigningRequests nor ConfigMaps: read them directly.
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return nil, fmt.Errorf("transfer identity client: %w", err)
	}
	id, err := transfer.NewIdentity(transfer.IdentityOptions{Client: c, Node: o.NodeName, Namespace: o.Namespace})
	if err != nil {
		return nil, err
	}
	reader := thinmeta.New(o.Executor, thinmeta.WithLVMConfig(o.lvmConfig))
	verifier := transfer.NewVerifierOf(id.TokenKey, nil)
	// The tokens this node served are remembered next to the CSI socket, a directory on the node's
	// disk (the plugin directory of the kubelet), so that a restart of the agent forgets none.
	if err := verifier.WithJournal(filepath.Join(filepath.Dir(socketPath(o.CSIEndpoint)), TokenJournal)); err != nil {
		return nil, err
	}
	srv := &transferServer{id: id, addr: o.TransferAddress, node: o.NodeName, verifier: verifier,
		open: NewTransferSources(a.LVMD, reader).Open}
	var limit transfer.Limiter
	if o.TransferBandwidth > 0 {
		// One limiter for every copy of the node; a burst of 4 MiB lets a whole chunk through.
		limit = rate.NewLimiter(rate.Limit(o.TransferBandwidth), 4<<20)
	}
	for _, r := range []manager.Runnable{id, srv} {
		if err := mgr.Add(r); err != nil {
			return nil, fmt.Errorf("add transfer %T: %w", r, err)
		}
	}
	return &fetcher{id: id, limit: limit}, nil
}

// transferServer serves the node's Transfer service over mutual TLS once the identity is ready.
type transferServer struct {
	id       *transfer.Identity
	addr     string
	node     string
	verifier *transfer.Verifier
	open     transfer.OpenFunc
}

// TokenJournal is the file, beside the CSI socket, of the transfer tokens this node served.
const TokenJournal = "transfer-tokens-used"

// socketPath is the file of a unix endpoint (unix://path or a path).
func socketPath(endpoint string) string { return strings.TrimPrefix(endpoint, "unix://") }

// NeedLeaderElection is false: every agent serves its node.
func (*transferServer) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (s *transferServer) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-s.id.Ready():
	}
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("transfer service: %w", err)
	}
	g := grpc.NewServer(append(transferServerOptions(), grpc.Creds(transfer.Credentials(s.id.ServerTLS())))...)
	transferpb.RegisterTransferServer(g, transfer.NewServer(s.node, s.verifier, s.open))
	ctrl.LoggerFrom(ctx).WithName("transfer").Info("Serving transfers to other nodes' agents", "address", s.addr)
	go func() {
		<-ctx.Done()
		g.Stop() // copies resume from their checkpoints
	}()
	if err := g.Serve(lis); err != nil && ctx.Err() == nil {
		return fmt.Errorf("transfer service: %w", err)
	}
	return nil
}

// transferWindow is the HTTP/2 flow-control window of a copy's stream and connection: several
// chunks in flight, so that the source reads and hashes the next chunks while the target writes,
// syncs and reads back (gRPC's default starts at 64 KiB and grows only by its estimate of the
// link's bandwidth-delay product).
const transferWindow = 16 << 20

// transferServerOptions are the Transfer service's gRPC server options (its credentials apart).
func transferServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.InitialWindowSize(transferWindow), grpc.InitialConnWindowSize(transferWindow),
		grpc.WriteBufferSize(1 << 20), grpc.ReadBufferSize(1 << 20)}
}

// transferDialOptions are the fetcher's gRPC dial options (its credentials apart).
func transferDialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithInitialWindowSize(transferWindow), grpc.WithInitialConnWindowSize(transferWindow),
		grpc.WithWriteBufferSize(1 << 20), grpc.WithReadBufferSize(1 << 20)}
}

// fetcher is the target node's side: it fetches a source from another node's Transfer service
// into a local LV.
type fetcher struct {
	id    *transfer.Identity
	limit transfer.Limiter
}

// Fetch implements logicalvolume.Fetcher.
func (f *fetcher) Fetch(ctx context.Context, req logicalvolume.Fetch, onCheckpoint func(transfer.Progress),
) (transfer.Progress, error) {
	select {
	case <-ctx.Done():
		return req.From, ctx.Err()
	case <-f.id.Ready():
	}
	cfg, err := f.id.ClientTLS(req.SourceNode)
	if err != nil {
		return req.From, err
	}
	conn, err := grpc.NewClient(req.Address,
		append(transferDialOptions(), grpc.WithTransportCredentials(transfer.Credentials(cfg)))...)
	if err != nil {
		return req.From, fmt.Errorf("connect to node %s's agent at %s: %w", req.SourceNode, req.Address, err)
	}
	defer func() { _ = conn.Close() }()
	dev, err := os.OpenFile(req.Device, os.O_RDWR, 0)
	if err != nil {
		return req.From, fmt.Errorf("open target device: %w", err)
	}
	defer func() { _ = dev.Close() }()
	size, err := dev.Seek(0, io.SeekEnd)
	if err != nil {
		return req.From, fmt.Errorf("size of the target device: %w", err)
	}
	p, err := transfer.Fetch(ctx, transferpb.NewTransferClient(conn), req.Token, req.From, deviceSink{dev},
		transfer.Options{Dense: req.Dense, Limit: f.limit, CheckpointBytes: checkpointBytes(uint64(size)),
			CheckpointEvery: checkpointEvery,
			OnCheckpoint: func(p transfer.Progress) error {
				onCheckpoint(p)
				return nil
			}})
	if status.Code(errors.Unwrap(err)) == codes.NotFound {
		err = fmt.Errorf("%w: %w", transfer.ErrNotFound, err)
	}
	return p, err
}

// checkpointBytes is how much a copy into a device of size bytes writes between checkpoints: a
// sixteenth of it, within 4 MiB and 256 MiB, so that a small volume's copy records its progress as
// well as a large one's, and a checkpoint's read-back stays a small part of the work.
func checkpointBytes(size uint64) uint64 {
	const minimum, maximum = 4 << 20, 256 << 20
	return min(max(size/16/(1<<20)*(1<<20), minimum), maximum)
}

// checkpointEvery also checkpoints a copy after this long, however little it wrote: over a slow or
// busy link (a thin volume's 69 MiB at 66 KB/s on the local cluster) a sixteenth of the volume can
// take longer than the attempt lasts, and every retry then started over.
const checkpointEvery = 30 * time.Second

// deviceSink writes a block device; its Sync flushes the device and drops its cached pages, so that
// the read-back of a checkpoint reads what the device holds, not the page cache.
type deviceSink struct{ *os.File }

// Sync implements transfer.Sink.
func (d deviceSink) Sync() error {
	if err := d.File.Sync(); err != nil {
		return err
	}
	if err := unix.Fadvise(int(d.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("drop cached pages of %s: %w", d.Name(), err)
	}
	return nil
}
