package rpcserver_test

import (
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/rpcserver"
)

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"unix:///run/csi.sock", "/run/csi.sock", false},
		{"unix:/run/csi.sock", "/run/csi.sock", false},
		{"/run/csi.sock", "/run/csi.sock", false},
		{"tcp://127.0.0.1:10000", "", true},
		{"unix://", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := rpcserver.ParseEndpoint(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("got %q, %v; want %q (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
