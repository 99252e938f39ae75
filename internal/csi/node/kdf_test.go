package node

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/mount-utils"

	"github.com/lvm-operator/lvm-operator/internal/exec"
)

// kdfHost holds every cryptsetup command until released and records how many ran at once and the
// luksFormat arguments.
type kdfHost struct {
	mu            sync.Mutex
	running, most int
	format        []string
	release       chan struct{}
	started       chan struct{}
}

func (h *kdfHost) Exec(ctx context.Context, c exec.Cmd) error {
	h.mu.Lock()
	h.running++
	h.most = max(h.most, h.running)
	if c.Args[0] == "luksFormat" {
		h.format = slices.Clone(c.Args)
	}
	h.mu.Unlock()
	h.started <- struct{}{}
	<-h.release
	h.mu.Lock()
	h.running--
	h.mu.Unlock()
	return nil
}

// TestKeyDerivationsAreCapped: a node staging many encrypted volumes at once runs at most
// maxKeyDerivations luksFormat or open commands at a time (each derives a key with up to the
// container's argon2id memory), and formats containers with fixed parameters, not the host's.
func TestKeyDerivationsAreCapped(t *testing.T) {
	h := &kdfHost{release: make(chan struct{}), started: make(chan struct{}, 16)}
	srv, err := New(Options{NodeName: nodeName, Volumes: fakeVolumes{}, Mounter: mount.NewFakeMounter(nil), Exec: h})
	if err != nil {
		t.Fatal(err)
	}
	const calls = 6
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			args := []string{"open", "--type", "luks2", "--key-file=-", "/dev/vg/lv", "lvms-x"}
			if i == 0 {
				args = append(append([]string{"luksFormat"}, luksFormatArgs...), "/dev/vg/lv")
			}
			if err := srv.cryptsetup(t.Context(), []byte("key"), args...); err != nil {
				t.Error(err)
			}
		})
	}
	started := func() {
		t.Helper()
		select {
		case <-h.started:
		case <-time.After(10 * time.Second):
			t.Fatal("a cryptsetup command never started")
		}
		h.mu.Lock()
		running := h.running
		h.mu.Unlock()
		if running > maxKeyDerivations {
			t.Fatalf("%d key derivations at once, want at most %d", running, maxKeyDerivations)
		}
	}
	// The first maxKeyDerivations start without waiting for each other; each of the rest starts
	// only when one of those running ends.
	for range maxKeyDerivations {
		started()
	}
	for range calls - maxKeyDerivations {
		h.release <- struct{}{}
		started()
	}
	for range maxKeyDerivations {
		h.release <- struct{}{}
	}
	wg.Wait()
	if h.most != maxKeyDerivations {
		t.Errorf("at most %d ran at once, want %d (the cap, reached)", h.most, maxKeyDerivations)
	}
	for _, want := range [][]string{{"--cipher", "aes-xts-plain64"}, {"--key-size", "512"}, {"--pbkdf", "argon2id"},
		{"--pbkdf-memory", "65536"}, {"--pbkdf-parallel", "1"}} {
		i := slices.Index(h.format, want[0])
		if i < 0 || i+1 >= len(h.format) || h.format[i+1] != want[1] {
			t.Errorf("luksFormat %q, want %s %s", h.format, want[0], want[1])
		}
	}
}
