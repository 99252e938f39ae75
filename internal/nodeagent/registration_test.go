package nodeagent

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/lvm-operator/lvm-operator/internal/csi/identity"
)

// shortTempDir is a temporary directory with a path short enough for a unix socket.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "reg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// TestRegistration plays the kubelet: it dials the registration socket, asks for the plugin info and
// reports the outcome.
func TestRegistration(t *testing.T) {
	sock := filepath.Join(shortTempDir(t), "plugins_registry", "topolvm.io-reg.sock")
	r := NewRegistration(
		RegistrationOptions{SocketPath: sock, Endpoint: "/var/lib/kubelet/plugins/topolvm.io/node/csi-topolvm.sock"},
	)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- r.Start(ctx) }()

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	kubelet := registerapi.NewRegistrationClient(conn)
	callCtx, callCancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer callCancel()

	info, err := kubelet.GetInfo(callCtx, &registerapi.InfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if info.GetType() != registerapi.CSIPlugin || info.GetName() != "topolvm.io" ||
		info.GetEndpoint() != "/var/lib/kubelet/plugins/topolvm.io/node/csi-topolvm.sock" ||
		len(info.GetSupportedVersions()) != 1 || info.GetSupportedVersions()[0] != "1.0.0" {
		t.Errorf("GetInfo = %v", info)
	}

	steps := []struct {
		report *registerapi.RegistrationStatus
		want   RegistrationStatus
	}{
		{&registerapi.RegistrationStatus{PluginRegistered: false, Error: "version not supported"},
			RegistrationStatus{Reported: true, Error: "version not supported"}},
		{&registerapi.RegistrationStatus{PluginRegistered: true}, RegistrationStatus{Reported: true, Registered: true}},
	}
	if got := r.Status(); got != (RegistrationStatus{}) {
		t.Errorf("status before any report = %+v", got)
	}
	for _, s := range steps {
		if _, err := kubelet.NotifyRegistrationStatus(callCtx, s.report); err != nil {
			t.Fatal(err)
		}
		if got := r.Status(); got != s.want {
			t.Errorf("after %v: status %+v, want %+v", s.report, got, s.want)
		}
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start: %v", err)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket left after stop (the kubelet would keep the driver registered): %v", err)
	}
}

// prober is a CSI Identity Probe answering ready or err.
type prober struct {
	ready *wrapperspb.BoolValue
	err   error
}

func (p prober) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: p.ready}, p.err
}

func TestProbeCheck(t *testing.T) {
	tests := []struct {
		name     string
		p        Prober
		wantCode int
	}{
		{name: "ready", p: prober{ready: wrapperspb.Bool(true)}, wantCode: http.StatusOK},
		{name: "ready unset counts as ready", p: prober{}, wantCode: http.StatusOK},
		{name: "not ready", p: prober{ready: wrapperspb.Bool(false)}, wantCode: http.StatusInternalServerError},
		{name: "probe error", p: prober{err: status.Error(codes.FailedPrecondition, "lvmd down")},
			wantCode: http.StatusInternalServerError},
		{name: "identity server, healthy", p: identity.New(nil), wantCode: http.StatusOK},
		{name: "identity server, unhealthy", p: identity.New(func(context.Context) (bool, error) {
			return false, errors.New("lvmd state unreadable")
		}), wantCode: http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &healthz.Handler{Checks: map[string]healthz.Checker{"csi": ProbeCheck(tt.p, time.Second)}}
			srv := httptest.NewServer(http.StripPrefix("/healthz", h))
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tt.wantCode {
				t.Errorf("GET /healthz = %d, want %d", resp.StatusCode, tt.wantCode)
			}
		})
	}
}
