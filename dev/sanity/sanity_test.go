//go:build guest

package sanity_test

import (
	"bytes"
	"context"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/driver"
)

// Sizes of csi-sanity's volumes: small enough for the 2 GiB guest disks, large enough for ext4.
const (
	volumeSize = 64 << 20
	expandSize = 128 << 20
)

// sanityRun is one csi-sanity invocation.
type sanityRun struct {
	name        string
	deviceClass string
	accessType  string // mount or block
	// skip is a --ginkgo.skip regexp of specs that do not apply to the device class, beside the reason.
	skip string
	// passed and skipped are the counts the run must show (docs/testing-sanity.md): a capability
	// the driver stops advertising turns specs into skips, which csi-sanity does not fail on.
	passed, skipped int
}

// TestSanity runs csi-sanity three times against one stack: thick filesystem volumes, thin
// filesystem volumes (snapshots are thin snapshots there), and thick block volumes. csi-sanity decides
// itself which specs apply from the capabilities the driver advertises; every spec that runs must pass
// and every run must leave no LogicalVolume and no LV behind.
func TestSanity(t *testing.T) {
	bin := os.Getenv("CSI_SANITY")
	if bin == "" {
		t.Fatal("CSI_SANITY (path of the csi-sanity binary) is not set: run hack/sanity.sh")
	}
	disks := strings.Split(os.Getenv("LVMS_GUEST_DISKS"), ",")
	outDir := os.Getenv("SANITY_OUT")
	if outDir == "" {
		outDir = t.TempDir()
	}
	dir, err := os.MkdirTemp("/tmp", "sanity-")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s := startStack(t, dir, filepath.Join(outDir, "stack.log"), disks)
	t.Logf("stack ready in %s: node %s, controller %s", time.Since(start).Round(time.Millisecond),
		s.nodeSocket, s.controllerSocket)

	summaries, err := os.Create(filepath.Join(outDir, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = summaries.Close() }()
	for _, r := range []sanityRun{
		{name: "thick", deviceClass: "thick", accessType: "mount", passed: 84, skipped: 18},
		{name: "thin", deviceClass: "thin", accessType: "mount", passed: 84, skipped: 18},
		{name: "block", deviceClass: "thick", accessType: "block", passed: 84, skipped: 18},
	} {
		t.Run(r.name, func(t *testing.T) {
			sum := runSanity(t, bin, s, r, filepath.Join(dir, r.name), outDir)
			if err := sum.expect(r.passed, r.skipped); err != nil {
				t.Error(err)
			}
			var b bytes.Buffer
			if err := sum.write(io.MultiWriter(&b, summaries), r.name); err != nil {
				t.Error(err)
			}
			t.Log("\n" + b.String())
			left, err := s.leftovers(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(left) > 0 {
				t.Errorf("csi-sanity %s left behind: %v", r.name, left)
			}
		})
	}
	t.Run("lvcreate option class", func(t *testing.T) { testOptionClass(t, s) })
}

// runSanity runs the csi-sanity binary for r, streaming its output, and returns its summary. It fails
// t if csi-sanity fails or its summary cannot be read.
func runSanity(t *testing.T, bin string, s *stack, r sanityRun, dir, outDir string) *summary {
	t.Helper()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	params := filepath.Join(dir, "volume-parameters.yaml")
	if err := os.WriteFile(params, []byte(driver.ParamDeviceClass+": "+r.deviceClass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The ModifyVolume specs create and modify volumes with these caps and this read-ahead (set by
	// lvm2 on the LV) of a VolumeAttributesClass.
	mutable := filepath.Join(dir, "mutable-parameters.yaml")
	if err := os.WriteFile(mutable, []byte(driver.ParamWriteBPS+": 100Mi\n"+driver.ParamReadIOPS+": \"5000\"\n"+
		driver.ParamReadAhead+": 256Ki\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(outDir, "csi-sanity-"+r.name+".json")
	args := []string{
		"--csi.endpoint=unix://" + s.nodeSocket,
		"--csi.controllerendpoint=unix://" + s.controllerSocket,
		"--csi.mountdir=" + filepath.Join(dir, "mount"),
		"--csi.stagingdir=" + filepath.Join(dir, "staging"),
		"--csi.testvolumeparameters=" + params,
		"--csi.testvolumemutableparameters=" + mutable,
		"--csi.testvolumesize=" + strconv.Itoa(volumeSize),
		"--csi.testvolumeexpandsize=" + strconv.Itoa(expandSize),
		"--csi.testvolumeaccesstype=" + r.accessType,
		"--ginkgo.v", "--ginkgo.no-color", "--ginkgo.timeout=20m",
		"--ginkgo.json-report=" + report,
	}
	if r.skip != "" {
		args = append(args, "--ginkgo.skip="+r.skip)
	}
	t.Logf("running %s %s", bin, strings.Join(args, " "))
	logFile, err := os.Create(filepath.Join(outDir, "csi-sanity-"+r.name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := osexec.CommandContext(ctx, bin, args...)
	cmd.Stdout = io.MultiWriter(os.Stdout, logFile, &out)
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	runErr := cmd.Run()
	t.Logf("csi-sanity %s finished in %s", r.name, time.Since(start).Round(time.Millisecond))

	sum := &summary{}
	if err := scanSummary(&out, sum); err != nil {
		t.Error(err)
	}
	if err := readSpecs(report, sum); err != nil {
		t.Error(err)
	}
	if runErr != nil {
		t.Errorf("csi-sanity %s: %v", r.name, runErr)
	}
	if sum.Ran == "" || sum.Counts == "" {
		t.Errorf("csi-sanity %s printed no ginkgo summary", r.name)
	}
	return sum
}
