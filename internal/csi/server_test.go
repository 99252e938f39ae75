package csi_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr/funcr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
	"github.com/lvm-operator/lvm-operator/internal/csi/identity"
	"github.com/lvm-operator/lvm-operator/internal/driver"
	"github.com/lvm-operator/lvm-operator/internal/rpcserver"
)

// TestServerServesLogsAndStops starts the server on a socket path holding a stale socket, calls it,
// checks the call was logged with secrets stripped, and stops it through the context.
func TestServerServesLogsAndStops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "csi.sock")
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = stale.Close()

	var logs strings.Builder
	log := funcr.New(func(prefix, args string) { logs.WriteString(args + "\n") }, funcr.Options{Verbosity: 1})
	srv, err := lvmcsi.NewServer("unix://"+path, log)
	if err != nil {
		t.Fatal(err)
	}
	spec.RegisterIdentityServer(srv.GRPC, identity.New(nil))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()

	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Start listens in its goroutine: wait for the socket rather than fail on a connect that
	// comes first (seen under load).
	callCtx, callCancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer callCancel()
	info, err := spec.NewIdentityClient(
		conn,
	).GetPluginInfo(
		callCtx,
		&spec.GetPluginInfoRequest{},
		grpc.WaitForReady(true),
	)
	if err != nil || info.GetName() != driver.Name {
		t.Fatalf("GetPluginInfo: %v, %v", info, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}
	if !strings.Contains(logs.String(), "GetPluginInfo") || !strings.Contains(logs.String(), "latency") {
		t.Errorf("call not logged:\n%s", logs.String())
	}
}

func TestListenRefusesToRemoveNonSockets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := rpcserver.Listen(path); err == nil {
		t.Fatal("Listen replaced a regular file")
	}
	if b, _ := os.ReadFile(path); string(b) != "data" {
		t.Fatal("the file was touched")
	}
}

// TestUnaryLoggerStripsSecrets: the passphrases of encrypted volumes (node-stage and node-expand
// secrets) never reach the log, whether the call succeeds or fails.
func TestUnaryLoggerStripsSecrets(t *testing.T) {
	secrets := map[string]string{"key": "hunter2"}
	for _, req := range []any{
		&spec.NodePublishVolumeRequest{VolumeId: "v1", Secrets: secrets},
		&spec.NodeStageVolumeRequest{VolumeId: "v1", Secrets: secrets},
		&spec.NodeExpandVolumeRequest{VolumeId: "v1", Secrets: secrets},
	} {
		for _, fail := range []bool{false, true} {
			var logs strings.Builder
			log := funcr.New(func(prefix, args string) { logs.WriteString(args + "\n") }, funcr.Options{Verbosity: 1})
			intercept := rpcserver.UnaryLogger(log)
			_, _ = intercept(t.Context(), req, &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Node/X"},
				func(context.Context, any) (any, error) {
					if fail {
						return nil, errors.New("failed")
					}
					return &spec.NodePublishVolumeResponse{}, nil
				})
			if strings.Contains(logs.String(), "hunter2") || !strings.Contains(logs.String(), "v1") {
				t.Errorf("%T (failed %v): log leaks a secret or lacks the request:\n%s", req, fail, logs.String())
			}
		}
	}
}
