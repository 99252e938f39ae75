//go:build guest

package sanity_test

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// stripedOptionClass is the lvcreate option class of lvmdConfig.
const stripedOptionClass = "striped"

// startLVMD runs `lvms lvmd` (the product binary from envLVMS) as a process of its own, as TopoLVM's
// "lvmd as a systemd service" deployment runs it, serving s.lvmdSocket; t.Cleanup stops it with
// SIGTERM. Its output goes to logPath.
func (s *stack) startLVMD(t *testing.T, dir, logPath string) error {
	bin := os.Getenv(envLVMS)
	if bin == "" {
		return fmt.Errorf("%s (the lvms binary) is not set: run hack/sanity.sh", envLVMS)
	}
	cfg := filepath.Join(dir, "lvmd.yaml")
	if err := os.WriteFile(cfg, []byte(lvmdConfig), 0o600); err != nil {
		return fmt.Errorf("lvmd config: %w", err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("lvmd log: %w", err)
	}
	cmd := osexec.Command(bin, "lvmd", "--config", cfg, "--socket", s.lvmdSocket, "--node-name", nodeName, "-v", "1")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("start lvms lvmd: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		defer func() { _ = logFile.Close() }()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("lvms lvmd exited with %v after SIGTERM (log %s)", err, logPath)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("lvms lvmd did not stop within 30 s of SIGTERM (log %s)", logPath)
		}
	})
	return nil
}

// testOptionClass creates a volume through the CSI controller with the parameters a StorageClass
// naming the option class hands the external-provisioner, and checks with lvs that lvm2 striped the LV
// over both disks of the thick VG as the option class says.
func testOptionClass(t *testing.T, s *stack) {
	conn, err := grpc.NewClient("unix://"+s.controllerSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctrl := csi.NewControllerClient(conn)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	resp, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name:          "option-class",
		CapacityRange: &csi.CapacityRange{RequiredBytes: volumeSize},
		Parameters: map[string]string{
			driver.ParamDeviceClass: "thick", driver.ParamLvcreateOptionClass: stripedOptionClass,
		},
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
	})
	if err != nil {
		t.Fatalf("CreateVolume with lvcreate option class %s: %v", stripedOptionClass, err)
	}
	id := resp.GetVolume().GetVolumeId()
	defer func() {
		if _, err := ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
			t.Errorf("DeleteVolume %s: %v", id, err)
		}
	}()
	out, err := osexec.CommandContext(ctx, "lvm", "lvs", "--noheadings", "--separator", ",",
		"-o", "lv_name,segtype,stripes,stripe_size,devices", "--units", "k", thickVG+"/"+id).CombinedOutput()
	if err != nil {
		t.Fatalf("lvs %s/%s: %v: %s", thickVG, id, err, out)
	}
	got := strings.TrimSpace(string(out))
	t.Logf("lvs -o lv_name,segtype,stripes,stripe_size,devices %s/%s: %s", thickVG, id, got)
	f := strings.Split(got, ",")
	if len(f) < 5 || f[1] != "striped" || f[2] != "2" || f[3] != "64.00k" {
		t.Errorf("LV %s: %q, want segment type striped, 2 stripes of 64.00k", id, got)
	}
}
