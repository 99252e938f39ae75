package main

import (
	"strings"
	"testing"
)

func TestDriverFlags(t *testing.T) {
	shell := "--node-shell=topolvm-system/app.kubernetes.io/name=peer-node-shell"
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "lvms by default", args: nil},
		{name: "an unknown driver", args: []string{"--driver", "other"}, wantErr: `--driver "other"`},
		{name: "topolvm without a floor VG", args: []string{"--driver", "topolvm", shell}, wantErr: "--floor-vg"},
		{name: "topolvm without a node shell", args: []string{"--driver", "topolvm", "--floor-vg", "thin"},
			wantErr: "--node-shell"},
		{name: "topolvm with a node shell lacking its selector", args: []string{"--driver", "topolvm",
			"--floor-vg", "thin", "--node-shell", "topolvm-system"}, wantErr: "--node-shell"},
		{name: "topolvm with its floor", args: []string{"--driver", "topolvm", "--floor-vg", "thin",
			"--floor-thin-pool", "thin-pool-1", shell}},
		{name: "topolvm without a floor needs neither", args: []string{"--driver", "topolvm", "--floor=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(tc.args)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("parseFlags(%q): %v", tc.args, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("parseFlags(%q) = %v, want an error about %s", tc.args, err, tc.wantErr)
			case err == nil && o.driver == "":
				t.Fatalf("parseFlags(%q) left the driver empty", tc.args)
			}
		})
	}
}

func TestFloorTargetOfAPeer(t *testing.T) {
	p := &floorProbe{o: &options{driver: driverTopoLVM, floorVG: "thin", floorThinPool: "thin-pool-1"}}
	vg, pool, err := p.floorTarget(t.Context(), map[string]string{"topolvm.io/device-class": "ignored"})
	if err != nil || vg != "thin" || pool != "thin-pool-1" {
		t.Errorf("floorTarget = %q, %q, %v; want the flags' thin, thin-pool-1", vg, pool, err)
	}
}
