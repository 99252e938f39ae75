package node

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	mount "k8s.io/mount-utils"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/exec/exectest"
)

const (
	passphrase = "s3cret passphrase\n" // a trailing newline is part of the key
	mapping    = "lvms-" + volID
	mapperDev  = "/dev/mapper/" + mapping
)

// cryptHost plays blkid, wipefs, mkfs, resize2fs and cryptsetup over in-memory devices: the signature
// each carries, the passphrase of each LUKS header and the open dm-crypt mappings, whose device
// nodes it keeps in mapperDir as device-mapper does in /dev/mapper.
type cryptHost struct {
	t         *testing.T
	mu        sync.Mutex
	sig       map[string]string // device → blkid TYPE, absent = blank
	key       map[string]string // LUKS device → passphrase
	open      map[string]string // mapping name → device
	busy      bool              // close finds the mapping in use
	mapperDir string
}

func newCryptHost(t *testing.T) *cryptHost {
	return &cryptHost{t: t, sig: map[string]string{}, key: map[string]string{}, open: map[string]string{},
		mapperDir: t.TempDir()}
}

// setOpen opens (dev != "") or closes the mapping name, with its device node.
func (h *cryptHost) setOpen(name, dev string) {
	node := filepath.Join(h.mapperDir, name)
	if dev == "" {
		delete(h.open, name)
		if err := os.Remove(node); err != nil {
			h.t.Error(err)
		}
		return
	}
	h.open[name] = dev
	if err := os.WriteFile(node, nil, 0o600); err != nil {
		h.t.Error(err)
	}
}

func (h *cryptHost) handle(c exectest.Call) exectest.Response {
	h.mu.Lock()
	defer h.mu.Unlock()
	last := c.Args[len(c.Args)-1]
	switch {
	case c.Name == "blkid":
		if t, ok := h.sig[last]; ok {
			return exectest.OK("DEVNAME=" + last + "\nTYPE=" + t + "\n")
		}
		return exectest.Fail(2, "")
	case c.Name == "wipefs":
		return exectest.OK(`{"signatures":[]}`)
	case strings.HasPrefix(c.Name, "mkfs."):
		h.sig[last] = strings.TrimPrefix(c.Name, "mkfs.")
		return exectest.OK("")
	case c.Name == "resize2fs":
		return exectest.OK("")
	case c.Name == "cryptsetup":
		return h.cryptsetup(c)
	}
	return exectest.Fail(127, c.Name+": not found")
}

func (h *cryptHost) cryptsetup(c exectest.Call) exectest.Response {
	keyFromStdin := slices.Contains(c.Args, "--key-file=-")
	switch c.Args[0] {
	case "status":
		if _, ok := h.open[c.Args[1]]; ok {
			return exectest.OK(c.Args[1] + " is active.\n  type:    LUKS2\n")
		}
		return exectest.Fail(cryptWrongDevice, "Device "+c.Args[1]+" not found")
	case "luksFormat":
		dev := c.Args[len(c.Args)-1]
		h.sig[dev], h.key[dev] = luksType, c.Stdin
		return exectest.OK("")
	case "open":
		dev, name := c.Args[len(c.Args)-2], c.Args[len(c.Args)-1]
		switch {
		case h.sig[dev] != luksType:
			return exectest.Fail(1, "Device "+dev+" is not a valid LUKS device.")
		case !keyFromStdin || c.Stdin != h.key[dev]:
			return exectest.Fail(cryptNoPermission, "No key available with this passphrase.")
		case h.open[name] != "":
			return exectest.Fail(cryptBusy, "Device "+name+" already exists.")
		}
		h.setOpen(name, dev)
		return exectest.OK("")
	case "close":
		switch {
		case h.open[c.Args[1]] == "":
			return exectest.Fail(cryptWrongDevice, "Device "+c.Args[1]+" is not active.")
		case h.busy:
			return exectest.Fail(cryptBusy, "Device "+c.Args[1]+" is still in use.")
		}
		h.setOpen(c.Args[1], "")
		return exectest.OK("")
	case "resize":
		dev, ok := h.open[c.Args[1]]
		if !ok {
			return exectest.Fail(cryptWrongDevice, "Device "+c.Args[1]+" not found")
		}
		if keyFromStdin && c.Stdin != h.key[dev] {
			return exectest.Fail(cryptNoPermission, "No key available with this passphrase.")
		}
		return exectest.OK("")
	}
	return exectest.Fail(1, "unknown action")
}

// newCryptFixture is a node holding volID on dev, played by a cryptHost.
func newCryptFixture(t *testing.T) (*fixture, *cryptHost) {
	t.Helper()
	h := newCryptHost(t)
	f := &fixture{mounter: mount.NewFakeMounter(nil), exec: exectest.New(), dir: t.TempDir()}
	f.exec.Handler = h.handle
	srv, err := New(Options{
		NodeName: nodeName, Volumes: fakeVolumes{volID: dev}, Mounter: f.mounter, Exec: f.exec, KubeletDir: f.dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.mapperDir = h.mapperDir
	f.srv = srv
	return f, h
}

var luks2 = map[string]string{driver.ParamEncryption: lvmcsi.EncryptionLUKS2}

func (f *fixture) stageReq(
	c *csi.VolumeCapability,
	volumeContext map[string]string,
	key string,
) *csi.NodeStageVolumeRequest {
	r := &csi.NodeStageVolumeRequest{
		VolumeId: volID, StagingTargetPath: f.target("staging"), VolumeCapability: c, VolumeContext: volumeContext,
	}
	if key != "" {
		r.Secrets = map[string]string{lvmcsi.SecretKeyPassphrase: key}
	}
	return r
}

func (f *fixture) unstage(t *testing.T) error {
	t.Helper()
	_, err := f.srv.NodeUnstageVolume(t.Context(),
		&csi.NodeUnstageVolumeRequest{VolumeId: volID, StagingTargetPath: f.target("staging")})
	return err
}

// checkKeyOnlyOnStdin fails when the passphrase appears in any command's arguments, and when a
// cryptsetup command reading --key-file=- got anything else on its standard input.
func checkKeyOnlyOnStdin(t *testing.T, f *fixture) {
	t.Helper()
	key := strings.TrimSpace(passphrase)
	for _, c := range f.exec.Calls() {
		if strings.Contains(c.Line(), key) {
			t.Errorf("the passphrase is in the command line %q", c.Line())
		}
		if slices.Contains(c.Args, "--key-file=-") && c.Stdin != passphrase {
			t.Errorf("%q got %q on stdin, want the passphrase", c.Line(), c.Stdin)
		}
	}
}

func TestNodeStagePlainVolume(t *testing.T) {
	f, _ := newCryptFixture(t)
	for range 2 {
		if _, err := f.srv.NodeStageVolume(t.Context(), f.stageReq(mountCap("ext4"), nil, "")); err != nil {
			t.Fatalf("NodeStageVolume: %v", err)
		}
	}
	if l := f.exec.Lines(); len(l) != 0 {
		t.Errorf("staging a plain volume ran %q", l)
	}
	for range 2 {
		if err := f.unstage(t); err != nil {
			t.Fatalf("NodeUnstageVolume: %v", err)
		}
	}
	// No device node of its mapping: cryptsetup is not asked.
	if l := f.exec.Lines(); len(l) != 0 {
		t.Errorf("unstaging a plain volume ran %q", l)
	}
}

// TestEncryptedVolumeLifecycle goes through what the kubelet does with an encrypted volume: stage
// (format and open), publish the mapping, refuse to unstage while published, unpublish, unstage (close),
// stage again (open, no second format) and expand (resize the mapping, then the filesystem on it).
func TestEncryptedVolumeLifecycle(t *testing.T) {
	for _, c := range []*csi.VolumeCapability{mountCap("ext4"), blockCap()} {
		block := c.GetBlock() != nil
		t.Run(map[bool]string{false: "filesystem", true: "block"}[block], func(t *testing.T) {
			f, h := newCryptFixture(t)
			stage := func() {
				t.Helper()
				for range 2 { // idempotent
					if _, err := f.srv.NodeStageVolume(t.Context(), f.stageReq(c, luks2, passphrase)); err != nil {
						t.Fatalf("NodeStageVolume: %v", err)
					}
				}
				if h.open[mapping] != dev {
					t.Fatalf("mappings %v, want %s open on %s", h.open, mapping, dev)
				}
			}
			stage()
			target := f.target("pod")
			pub := publishReq(target, c, false)
			pub.VolumeContext = luks2
			if _, err := f.srv.NodePublishVolume(t.Context(), pub); err != nil {
				t.Fatalf("NodePublishVolume: %v", err)
			}
			if mps, _ := f.mounter.List(); len(mps) != 1 || mps[0].Device != mapperDev {
				t.Fatalf("mounts %+v, want %s at %s", mps, mapperDev, target)
			}
			if !block && (h.sig[mapperDev] != "ext4" || h.sig[dev] != luksType) {
				t.Errorf("signatures %v: want ext4 on the mapping, the LUKS header on the LV", h.sig)
			}
			h.busy = true
			wantCode(t, f.unstage(t), codes.FailedPrecondition)
			h.busy = false
			if _, err := f.srv.NodeUnpublishVolume(t.Context(),
				&csi.NodeUnpublishVolumeRequest{VolumeId: volID, TargetPath: target}); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := f.unstage(t); err != nil {
					t.Fatalf("NodeUnstageVolume: %v", err)
				}
			}
			if len(h.open) != 0 {
				t.Fatalf("mappings %v open after NodeUnstageVolume", h.open)
			}
			stage()
			if n := countLines(f, "cryptsetup luksFormat"); n != 1 {
				t.Errorf("luksFormat ran %d times, want once", n)
			}
			if _, err := f.srv.NodePublishVolume(t.Context(), pub); err != nil {
				t.Fatalf("NodePublishVolume after restaging: %v", err)
			}
			f.exec.Reset()
			resp, err := f.srv.NodeExpandVolume(t.Context(), &csi.NodeExpandVolumeRequest{
				VolumeId: volID, VolumePath: target, VolumeCapability: c,
				Secrets: map[string]string{lvmcsi.SecretKeyPassphrase: passphrase},
			})
			if err != nil || resp.GetCapacityBytes() != volSize {
				t.Fatalf("NodeExpandVolume: %v, %v", resp, err)
			}
			want := []string{"cryptsetup status " + mapping, "cryptsetup resize " + mapping + " --key-file=-"}
			if !block {
				want = append(want, "blkid -p -o export "+mapperDev, "resize2fs "+mapperDev)
			}
			if !slices.Equal(f.exec.Lines(), want) {
				t.Errorf("NodeExpandVolume ran %q, want %q", f.exec.Lines(), want)
			}
			checkKeyOnlyOnStdin(t, f)
		})
	}
}

func countLines(f *fixture, prefix string) int {
	n := 0
	for _, l := range f.exec.Lines() {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

func TestNodeStageEncryptedRefusals(t *testing.T) {
	tests := []struct {
		name     string
		existing string // signature on the LV, "" = blank
		luksKey  string // passphrase of an existing LUKS header
		req      func(f *fixture) *csi.NodeStageVolumeRequest
		want     codes.Code
	}{
		{"no key", "", "", func(f *fixture) *csi.NodeStageVolumeRequest {
			return f.stageReq(mountCap("ext4"), luks2, "")
		}, codes.InvalidArgument},
		{"unknown encryption", "", "", func(f *fixture) *csi.NodeStageVolumeRequest {
			return f.stageReq(mountCap("ext4"), map[string]string{driver.ParamEncryption: "luks1"}, passphrase)
		}, codes.InvalidArgument},
		{"filesystem on the LV is never encrypted", "ext4", "", func(f *fixture) *csi.NodeStageVolumeRequest {
			return f.stageReq(mountCap("ext4"), luks2, passphrase)
		}, codes.FailedPrecondition},
		{"wrong key", luksType, "another key", func(f *fixture) *csi.NodeStageVolumeRequest {
			return f.stageReq(mountCap("ext4"), luks2, passphrase)
		}, codes.PermissionDenied},
		{"no volume ID", "", "", func(f *fixture) *csi.NodeStageVolumeRequest {
			r := f.stageReq(mountCap("ext4"), luks2, passphrase)
			r.VolumeId = ""
			return r
		}, codes.InvalidArgument},
		{"no staging path", "", "", func(f *fixture) *csi.NodeStageVolumeRequest {
			r := f.stageReq(mountCap("ext4"), luks2, passphrase)
			r.StagingTargetPath = ""
			return r
		}, codes.InvalidArgument},
		{"staging path outside the kubelet's directory", "", "", func(f *fixture) *csi.NodeStageVolumeRequest {
			r := f.stageReq(mountCap("ext4"), luks2, passphrase)
			r.StagingTargetPath = "/etc/x"
			return r
		}, codes.InvalidArgument},
		{"no capability", "", "", func(f *fixture) *csi.NodeStageVolumeRequest {
			return f.stageReq(nil, luks2, passphrase)
		}, codes.InvalidArgument},
		{"unknown volume", "", "", func(f *fixture) *csi.NodeStageVolumeRequest {
			r := f.stageReq(mountCap("ext4"), luks2, passphrase)
			r.VolumeId = "vol-unknown"
			return r
		}, codes.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, h := newCryptFixture(t)
			if tt.existing != "" {
				h.sig[dev] = tt.existing
			}
			if tt.luksKey != "" {
				h.key[dev] = tt.luksKey
			}
			_, err := f.srv.NodeStageVolume(t.Context(), tt.req(f))
			wantCode(t, err, tt.want)
			t.Logf("refused: %v", err)
			if strings.Contains(err.Error(), strings.TrimSpace(passphrase)) {
				t.Errorf("the error shows the passphrase: %v", err)
			}
			if n := countLines(f, "cryptsetup luksFormat"); n != 0 {
				t.Errorf("luksFormat ran %d times", n)
			}
			if h.sig[dev] != tt.existing || len(h.open) != 0 {
				t.Errorf("device changed: signature %q (was %q), mappings %v", h.sig[dev], tt.existing, h.open)
			}
			checkKeyOnlyOnStdin(t, f)
		})
	}
}

func TestNodePublishEncryptedNeedsStaging(t *testing.T) {
	f, _ := newCryptFixture(t)
	pub := publishReq(f.target("pod"), mountCap("ext4"), false)
	pub.VolumeContext = luks2
	_, err := f.srv.NodePublishVolume(t.Context(), pub)
	wantCode(t, err, codes.FailedPrecondition)
	if mps, _ := f.mounter.List(); len(mps) != 0 {
		t.Errorf("mounted %+v", mps)
	}
	if n := countLines(f, "mkfs."); n != 0 {
		t.Errorf("formatted the LV of an encrypted volume: %q", f.exec.Lines())
	}
}

func TestNodeExpandEncryptedWithoutExpandSecret(t *testing.T) {
	f, h := newCryptFixture(t)
	h.sig[dev], h.key[dev] = luksType, passphrase
	h.setOpen(mapping, dev)
	h.sig[mapperDev] = "ext4"
	target := f.target("pod")
	pub := publishReq(target, mountCap("ext4"), false)
	pub.VolumeContext = luks2
	if _, err := f.srv.NodePublishVolume(t.Context(), pub); err != nil {
		t.Fatal(err)
	}
	if _, err := f.srv.NodeExpandVolume(t.Context(),
		&csi.NodeExpandVolumeRequest{VolumeId: volID, VolumePath: target}); err != nil {
		t.Fatalf("NodeExpandVolume: %v", err)
	}
	if n := countLines(f, "cryptsetup resize "+mapping); n != 1 || slices.ContainsFunc(f.exec.Calls(),
		func(c exectest.Call) bool { return slices.Contains(c.Args, "--key-file=-") && c.Args[0] == "resize" }) {
		t.Errorf("commands %q, want one cryptsetup resize without --key-file", f.exec.Lines())
	}
}

func TestMappingName(t *testing.T) {
	longest, long := strings.Repeat("a", 100), strings.Repeat("a", 101)
	for id, want := range map[string]string{
		longest:                                "lvms-" + longest,
		"0f1e2d3c-aaaa-bbbb-cccc-000000000001": "lvms-0f1e2d3c-aaaa-bbbb-cccc-000000000001",
		"pvc-1":                                "lvms-pvc-1",
		"a/b":                                  "lvms-",
		long:                                   "lvms-",
		"-x":                                   "lvms-",
	} {
		got := mappingName(id)
		if want == "lvms-" && (len(got) != len("lvms-")+40 || strings.Contains(got, "/")) ||
			want != "lvms-" && got != want {
			t.Errorf("mappingName(%q) = %q, want %q", id, got, want)
		}
	}
}
