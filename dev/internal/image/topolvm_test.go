package image

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestModuleVersion(t *testing.T) {
	dep := &debug.Module{Path: topolvmModule, Version: "v0.41.0"}
	for _, tc := range []struct {
		name    string
		info    *debug.BuildInfo
		want    string
		wantErr string
	}{
		{name: "the main module (go build of a dependency's command)",
			info: &debug.BuildInfo{Main: debug.Module{Path: topolvmModule, Version: "v0.41.0"}}, want: "v0.41.0"},
		{name: "a dependency of a wrapper module",
			info: &debug.BuildInfo{Main: debug.Module{Path: "lvms.local/topolvm-peer", Version: "(devel)"},
				Deps: []*debug.Module{{Path: "k8s.io/api", Version: "v0.35.4"}, dep}}, want: "v0.41.0"},
		{name: "a checkout of TopoLVM, not a release",
			info:    &debug.BuildInfo{Main: debug.Module{Path: topolvmModule, Version: "(devel)"}},
			wantErr: "not built from"},
		{name: "another program", info: &debug.BuildInfo{Main: debug.Module{Path: "example.com/x"}},
			wantErr: "not built from"},
		{name: "no build information", wantErr: "no build information"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := moduleVersion(GoBinary{Path: "/hypertopolvm", Info: tc.info}, topolvmModule)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("moduleVersion = %q, %v; want an error about %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("moduleVersion = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestTopoLVMRef(t *testing.T) {
	if got := TopoLVMRef("v0.41.0"); got != "lvms.local/topolvm:v0.41.0" {
		t.Errorf("TopoLVMRef = %q", got)
	}
}
