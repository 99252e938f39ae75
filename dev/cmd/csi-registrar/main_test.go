package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// TestRegistration plays the kubelet's plugin watcher: the registration socket appears only once
// the CSI socket accepts connections, GetInfo names the driver and its endpoint, a failed
// registration ends the command with an error, and the socket is gone afterwards.
func TestRegistration(t *testing.T) {
	dir, err := os.MkdirTemp("", "reg") // short: a unix socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	o := options{driver: "topolvm.io", endpoint: "/var/lib/kubelet/plugins/topolvm.io/node/csi-topolvm.sock",
		csiSocket: filepath.Join(dir, "csi.sock"), registrationDir: dir, wait: time.Minute}
	regSocket := filepath.Join(dir, "topolvm.io-reg.sock")
	done := make(chan error, 1)
	go func() { done <- run(t.Context(), o) }()

	time.Sleep(700 * time.Millisecond)
	if _, err := os.Stat(regSocket); err == nil {
		t.Fatal("the registration socket exists before the CSI socket does")
	}
	csi, err := net.Listen("unix", o.csiSocket)
	if err != nil {
		t.Fatal(err)
	}
	defer csi.Close()

	client := dialRegistration(t, regSocket)
	info, err := client.GetInfo(t.Context(), &registerapi.InfoRequest{})
	if err != nil {
		t.Fatalf("GetInfo: %v", err)
	}
	if info.GetType() != registerapi.CSIPlugin || info.GetName() != o.driver || info.GetEndpoint() != o.endpoint {
		t.Errorf("GetInfo = %v, want a CSI plugin %s at %s", info, o.driver, o.endpoint)
	}
	if _, err := client.NotifyRegistrationStatus(t.Context(),
		&registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatalf("NotifyRegistrationStatus(registered): %v", err)
	}
	if _, err := client.NotifyRegistrationStatus(t.Context(),
		&registerapi.RegistrationStatus{PluginRegistered: false, Error: "no NodeGetInfo"}); err != nil {
		t.Fatalf("NotifyRegistrationStatus(failed): %v", err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no NodeGetInfo") {
			t.Errorf("run after a failed registration = %v, want the kubelet's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run went on after a failed registration")
	}
	if _, err := os.Stat(regSocket); err == nil {
		t.Error("the registration socket is left after run returned")
	}
}

// dialRegistration connects to the registration socket once it exists.
func dialRegistration(t *testing.T, socket string) registerapi.RegistrationClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no registration socket %s", socket)
		case <-time.After(100 * time.Millisecond):
		}
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return registerapi.NewRegistrationClient(conn)
}

func TestWaitForSocketTimesOut(t *testing.T) {
	err := waitForSocket(t.Context(), filepath.Join(t.TempDir(), "none.sock"), 600*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "none.sock") {
		t.Errorf("waitForSocket of a missing socket = %v, want a timeout naming it", err)
	}
}
