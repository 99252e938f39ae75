//go:build !guest

package uml

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// requireUML skips unless LVMS_UML_TESTS=1 (hack/test-lvm.sh sets it, so `make test` runs these)
// and fails when the UML kernel is missing.
func requireUML(t *testing.T) {
	t.Helper()
	if os.Getenv("LVMS_UML_TESTS") != "1" {
		t.Skip("boots User-mode Linux guests; set LVMS_UML_TESTS=1 (hack/test-lvm.sh does)")
	}
	if _, err := exec.LookPath("linux.uml"); err != nil {
		t.Fatalf("linux.uml not installed; run hack/uml-deps.sh (make test runs it first): %v", err)
	}
}

func TestUMLRunExitCodeAndOutput(t *testing.T) {
	requireUML(t)
	var console bytes.Buffer
	out := t.TempDir()
	res, err := Run(context.Background(), Options{
		Command: []string{
			"/bin/sh",
			"-c",
			`echo hello from "$(grep -m1 vendor_id /proc/cpuinfo)"; ls -1 /dev/ubda /dev/ubdb; ` +
				`blockdev --getro /dev/ubdb; echo result >"$LVMS_GUEST_OUT/file"; echo "env=$K"; exit 3`,
		},
		Env:       map[string]string{"K": "v w"},
		Disks:     []Disk{{Size: 64 << 20}, {Size: 32 << 20, ReadOnly: true}},
		MemoryMiB: 256,
		Timeout:   3 * time.Minute,
		Stdout:    &console,
		OutDir:    out,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("boot-to-command %s, command %s, total %s", res.Boot, res.Command, res.Total)
	if res.ExitCode != 3 {
		t.Errorf("exit code = %d, want 3", res.ExitCode)
	}
	for _, want := range []string{"hello from vendor_id\t: User Mode Linux\n", "/dev/ubda\n/dev/ubdb\n1\n", "env=v w\n", "GUEST-EXIT=3\n"} {
		if !strings.Contains(console.String(), want) {
			t.Errorf("console lacks %q:\n%s", want, console.String())
		}
	}
	if strings.Contains(console.String(), "Linux version") || !bytes.Contains(res.Output, []byte("GUEST-START")) {
		t.Errorf("boot messages forwarded or missing from Output")
	}
	if got, err := os.ReadFile(filepath.Join(out, "file")); err != nil || string(got) != "result\n" {
		t.Errorf("file written by the guest = %q, %v", got, err)
	}
	if res.Boot <= 0 || res.Command <= 0 || res.Total < res.Boot+res.Command {
		t.Errorf("implausible timings: %+v", res)
	}
}

func TestUMLRunParallel(t *testing.T) {
	requireUML(t)
	const guests = 2
	var wg sync.WaitGroup
	results := make([]*Result, guests)
	errs := make([]error, guests)
	for i := range guests {
		wg.Go(func() {
			results[i], errs[i] = Run(context.Background(), Options{
				// Each guest writes and reads back its own disk: the disks must be distinct.
				Command: []string{"/bin/sh", "-c", fmt.Sprintf(
					`echo guest-%d | dd of=/dev/ubda bs=512 conv=sync 2>/dev/null && `+
						`dd if=/dev/ubda bs=512 count=1 2>/dev/null | tr -d '\0'; exit %d`, i, 10+i)},
				Disks:     []Disk{{Size: 16 << 20}},
				MemoryMiB: 256,
				Timeout:   3 * time.Minute,
			})
		})
	}
	wg.Wait()
	for i := range guests {
		if errs[i] != nil {
			t.Errorf("guest %d: %v", i, errs[i])
			continue
		}
		r := results[i]
		t.Logf("guest %d: boot-to-command %s, total %s", i, r.Boot, r.Total)
		if r.ExitCode != 10+i || !bytes.Contains(r.Output, fmt.Appendf(nil, "\nguest-%d\n", i)) {
			t.Errorf("guest %d: exit %d, output:\n%s", i, r.ExitCode, r.Output)
		}
	}
}

func TestUMLRunTimeoutKillsGuest(t *testing.T) {
	requireUML(t)
	res, err := Run(context.Background(), Options{
		Command:   []string{"/bin/sleep", "600"},
		MemoryMiB: 128,
		Timeout:   20 * time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("Run error = %v, want a deadline error", err)
	}
	if res == nil || res.Total > time.Minute {
		t.Errorf("result %+v: want a prompt stop", res)
	}
}

// TestUMLSerialLine checks the transport a node agent in a guest will use: a host socket handed
// to the guest as /dev/ttyS1, carrying bytes both ways.
func TestUMLSerialLine(t *testing.T) {
	requireUML(t)
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Non-blocking, so the host end honours read deadlines.
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	host, guest := os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "guest")
	defer host.Close()
	defer guest.Close()
	if err := host.SetDeadline(time.Now().Add(2 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	// The guest speaks first (bytes arriving before it opens the tty would be dropped), the host
	// answers.
	hostErr := make(chan error, 1)
	go func() {
		buf := make([]byte, 256)
		var got []byte
		for !bytes.Contains(got, []byte("from-guest")) {
			n, err := host.Read(buf)
			if err != nil {
				hostErr <- fmt.Errorf("host read after %q: %w", got, err)
				return
			}
			got = append(got, buf[:n]...)
		}
		_, err := host.Write([]byte("from-host\n"))
		hostErr <- err
	}()
	res, err := Run(context.Background(), Options{
		Command: []string{"/bin/sh", "-c", `stty -F /dev/ttyS1 raw -echo && exec 3<>/dev/ttyS1 && ` +
			`echo from-guest >&3 && head -n1 <&3`},
		SerialLines: []SerialLine{{Index: 1, File: guest}},
		MemoryMiB:   128,
		Timeout:     time.Minute,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := <-hostErr; err != nil {
		t.Error(err)
	}
	if res.ExitCode != 0 || !bytes.Contains(res.Output, []byte("\nfrom-host\n")) {
		t.Errorf("guest did not read the host's line: exit %d\n%s", res.ExitCode, res.Output)
	}
}
