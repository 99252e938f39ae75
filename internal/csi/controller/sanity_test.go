package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	mount "k8s.io/mount-utils"

	topolvmv1 "github.com/lvm-operator/lvm-operator/api/topolvm/v1"
	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/csi/identity"
	"github.com/lvm-operator/lvm-operator/internal/csi/node"
	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

// TestSanity runs the csi-sanity suite against this Controller service (on the envtest apiserver, with
// the fake node agent) and the Node service (with a fake mounter and fake host commands) behind one
// socket, as the kubernetes-csi sidecars would call them.
func TestSanity(t *testing.T) {
	dir := t.TempDir()
	server, err := lvmcsi.NewServer("unix://"+filepath.Join(dir, "csi.sock"), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	nodeSrv, err := node.New(node.Options{
		NodeName: nodeB, // where volumes without topology land (most free space)
		Volumes:  lvVolumes{},
		Mounter:  mount.NewFakeMounter(nil),
		Exec:     newFakeDisks().executor(),
		// csi-sanity's target and staging paths are below dir.
		KubeletDir: dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	csi.RegisterIdentityServer(server.GRPC, identity.New(nil))
	csi.RegisterControllerServer(server.GRPC, srv)
	csi.RegisterNodeServer(server.GRPC, nodeSrv)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- server.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	}()

	cfg := sanity.NewTestConfig()
	cfg.Address = server.Path
	cfg.TargetPath = filepath.Join(dir, "target")
	cfg.StagingPath = filepath.Join(dir, "staging")
	cfg.TestVolumeSize = lvmcsi.GiB
	cfg.TestVolumeExpandSize = 2 * lvmcsi.GiB
	cfg.IdempotentCount = 2
	mkdir := func(p string) (string, error) { return p, os.MkdirAll(p, 0o750) }
	cfg.CreateTargetDir, cfg.CreateStagingDir = mkdir, mkdir
	cfg.RemoveTargetPath, cfg.RemoveStagingPath = os.RemoveAll, os.RemoveAll
	sanity.Test(t, cfg)
}

// lvVolumes plays lvmd for the Node service: an LV exists when its LogicalVolume has a volume ID.
type lvVolumes struct{}

func (lvVolumes) Device(ctx context.Context, id string) (string, int64, error) {
	var list topolvmv1.LogicalVolumeList
	if err := k8s.List(ctx, &list); err != nil {
		return "", 0, err
	}
	for _, lv := range list.Items {
		if lv.Status.VolumeID == id && lv.DeletionTimestamp == nil {
			return "/dev/fake/" + id, currentSize(&lv), nil
		}
	}
	return "", 0, fmt.Errorf("volume %s: %w", id, node.ErrVolumeNotFound)
}

// fakeDisks remembers which fake devices were formatted, answering blkid and mkfs.* like a host would.
type fakeDisks struct {
	mu sync.Mutex
	fs map[string]string
}

func newFakeDisks() *fakeDisks { return &fakeDisks{fs: map[string]string{}} }

func (d *fakeDisks) executor() *exectest.Fake {
	f := exectest.New()
	f.Handler = func(c exectest.Call) exectest.Response {
		d.mu.Lock()
		defer d.mu.Unlock()
		dev := c.Args[len(c.Args)-1]
		switch {
		case c.Name == "blkid":
			if t, ok := d.fs[dev]; ok {
				return exectest.OK("DEVNAME=" + dev + "\nTYPE=" + t + "\n")
			}
			return exectest.Fail(2, "")
		case c.Name == "wipefs": // asked only after blkid found nothing
			return exectest.OK(`{"signatures":[]}`)
		case strings.HasPrefix(c.Name, "mkfs."):
			d.fs[dev] = strings.TrimPrefix(c.Name, "mkfs.")
			return exectest.OK("")
		case c.Name == "resize2fs" || c.Name == "xfs_growfs" || c.Name == "btrfs":
			return exectest.OK("")
		}
		return exectest.Fail(127, c.Name+": not found")
	}
	return f
}
