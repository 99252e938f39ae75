package lvmd_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

func TestParseConfig(t *testing.T) {
	const valid = `
socket-name: /run/lvmd/lvmd.sock
device-classes:
  - name: ssd
    volume-group: vg1
    default: true
    spare-gb: 0
    stripe: 2
    stripe-size: 64k
    lvcreate-options: ["--alloc", "anywhere"]
  - name: thin
    volume-group: vg1
    type: thin
    thin-pool: {name: pool, overprovision-ratio: 5.0}
  - name: mirrored
    volume-group: vg2
    raid: {type: raid1, mirrors: 1}
lvcreate-option-classes:
  - name: raid1
    options: ["--type", "raid1", "-m", "1"]
`
	tests := []struct {
		name    string
		yaml    string
		wantErr []string // substrings of the error
	}{
		{name: "valid", yaml: valid},
		{
			name:    "unknown field",
			yaml:    "device-classes: [{name: a, volume-group: vg, colour: red}]",
			wantErr: []string{"colour"},
		},
		{name: "no classes", yaml: "device-classes: []", wantErr: []string{"at least one device class"}},
		{name: "duplicate and two defaults", yaml: `device-classes:
  - {name: a, volume-group: vg, default: true}
  - {name: a, volume-group: vg, default: true}`, wantErr: []string{"duplicate name", "more than one default"}},
		{name: "bad names", yaml: "device-classes: [{name: 'a/b', volume-group: '-vg'}]",
			wantErr: []string{"name must be", `volume-group "-vg"`}},
		{name: "thin without pool", yaml: "device-classes: [{name: a, volume-group: vg, type: thin}]",
			wantErr: []string{"type thin needs thin-pool"}},
		{
			name:    "thin ratio below 1",
			yaml:    "device-classes: [{name: a, volume-group: vg, type: thin, thin-pool: {name: p, overprovision-ratio: 0.5}}]",
			wantErr: []string{"overprovision-ratio 0.5 must be at least 1"},
		},
		{
			name:    "thin with raid",
			yaml:    "device-classes: [{name: a, volume-group: vg, type: thin, thin-pool: {name: p, overprovision-ratio: 1}, raid: {type: raid1}}]",
			wantErr: []string{"do not apply to thin"},
		},
		{
			name:    "thick with pool",
			yaml:    "device-classes: [{name: a, volume-group: vg, thin-pool: {name: p, overprovision-ratio: 1}}]",
			wantErr: []string{"thin-pool is set"},
		},
		{
			name:    "bad type",
			yaml:    "device-classes: [{name: a, volume-group: vg, type: thic}]",
			wantErr: []string{`type "thic"`},
		},
		{
			name:    "bad raid",
			yaml:    "device-classes: [{name: a, volume-group: vg, raid: {type: raid7}}]",
			wantErr: []string{`"raid7"`},
		},
		{
			name:    "raid5 mirrors",
			yaml:    "device-classes: [{name: a, volume-group: vg, raid: {type: raid5, mirrors: 1}}]",
			wantErr: []string{"raid5 has no mirrors"},
		},
		{
			name:    "raid and stripe",
			yaml:    "device-classes: [{name: a, volume-group: vg, stripe: 2, raid: {type: raid1}}]",
			wantErr: []string{"use raid.stripes"},
		},
		{
			name:    "stripe zero and bad size",
			yaml:    "device-classes: [{name: a, volume-group: vg, stripe: 0, stripe-size: lots}]",
			wantErr: []string{"stripe must be at least 1", `stripe-size "lots"`},
		},
		{
			name:    "option class empty",
			yaml:    "device-classes: [{name: a, volume-group: vg}]\nlvcreate-option-classes: [{name: x, options: []}]",
			wantErr: []string{"options must not be empty"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := lvmd.ParseConfig([]byte(tt.yaml))
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if cfg == nil || len(cfg.DeviceClasses) == 0 {
					t.Fatalf("config = %+v", cfg)
				}
				return
			}
			if !errors.Is(err, lvmd.ErrInvalidArgument) {
				t.Fatalf("error %v does not wrap ErrInvalidArgument", err)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestConfigLookups(t *testing.T) {
	cfg := testConfig()
	if dc, err := cfg.DeviceClass(""); err != nil || dc.Name != "thick" {
		t.Errorf("default class = %v, %v", dc, err)
	}
	if dc, _ := cfg.DeviceClass("thick"); dc.SpareBytes() != gib {
		t.Errorf("spare = %d", dc.SpareBytes())
	}
	if dc, _ := cfg.DeviceClass("thin"); dc.SpareBytes() != 10*gib {
		t.Errorf("default spare = %d, want TopoLVM's 10 GiB", dc.SpareBytes())
	}
	if _, err := cfg.DeviceClass(
		"nope",
	); !errors.Is(err, lvmd.ErrUnknownDeviceClass) ||
		!errors.Is(err, lvmd.ErrInvalidArgument) {
		t.Errorf("unknown class error = %v", err)
	}
	cfg.DeviceClasses[0].Default = false
	if _, err := cfg.DeviceClass(""); !errors.Is(err, lvmd.ErrUnknownDeviceClass) {
		t.Errorf("no default class error = %v", err)
	}
}

// A manager made without classes (the node agent's, before its volume-group controller has fed
// it) answers lookups with ErrNotReady, which callers retry; once fed, an unknown class is
// ErrUnknownDeviceClass, which they do not.
func TestPendingDeviceClassManager(t *testing.T) {
	m, err := lvmd.NewDeviceClassManager(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"thin", ""} {
		_, err := m.DeviceClass(name)
		if !errors.Is(err, lvmd.ErrClassesPending) || !errors.Is(err, lvmd.ErrNotReady) ||
			errors.Is(err, lvmd.ErrUnknownDeviceClass) {
			t.Fatalf("DeviceClass(%q) before the first Replace: %v, want ErrNotReady", name, err)
		}
	}
	if n := len(m.Config().DeviceClasses); n != 0 {
		t.Fatalf("pending manager lists %d classes", n)
	}
	if err := m.Replace(
		&lvmd.Config{DeviceClasses: []lvmd.DeviceClass{{Name: "thick", VolumeGroup: "thick", Default: true}}},
	); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DeviceClass("thick"); err != nil {
		t.Fatalf("DeviceClass(thick) after Replace: %v", err)
	}
	if _, err := m.DeviceClass("thin"); !errors.Is(err, lvmd.ErrUnknownDeviceClass) {
		t.Fatalf("DeviceClass(thin) after Replace: %v, want ErrUnknownDeviceClass", err)
	}
	if err := m.Replace(&lvmd.Config{DeviceClasses: []lvmd.DeviceClass{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DeviceClass("thick"); !errors.Is(err, lvmd.ErrUnknownDeviceClass) {
		t.Fatalf("DeviceClass(thick) after replacing with no classes: %v, want ErrUnknownDeviceClass", err)
	}
}

// FuzzParseConfig: any input is either refused with ErrInvalidArgument or yields a configuration that
// validates and names at least one device class.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("device-classes:\n- name: thin\n  volume-group: vg\n  type: thin\n  default: true\n" +
		"  thin-pool:\n    name: pool\n    overprovision-ratio: 10\n"))
	f.Add(
		[]byte(
			"device-classes:\n- name: ssd\n  volume-group: vg\n  spare-gb: 10\n  lvcreate-options: [\"--type=raid1\"]\n",
		),
	)
	f.Add([]byte(`{"socket-name":"/run/lvmd.sock","device-classes":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := lvmd.ParseConfig(data)
		if err != nil {
			if !errors.Is(err, lvmd.ErrInvalidArgument) {
				t.Errorf("error %v does not wrap ErrInvalidArgument", err)
			}
			return
		}
		if len(cfg.DeviceClasses) == 0 {
			t.Error("accepted a configuration without device classes")
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("accepted a configuration that does not validate: %v", err)
		}
	})
}

func TestClassNames(t *testing.T) {
	for name, want := range map[string]bool{
		"a":                      true,
		"thin-1.fast_ssd":        true,
		strings.Repeat("a", 253): true,
		strings.Repeat("a", 254): false,
		"":                       false,
		"-a":                     false,
		"a-":                     false,
		"a/b":                    false,
		"a b":                    false,
		"ä":                      false,
	} {
		cfg := lvmd.Config{
			DeviceClasses:         []lvmd.DeviceClass{{Name: name, VolumeGroup: "vg"}},
			LVCreateOptionClasses: []lvmd.LVCreateOptionClass{{Name: name, Options: []string{"--type=raid1"}}},
		}
		err := cfg.Validate()
		if got := strings.Count(fmt.Sprint(err), "name must be"); got != map[bool]int{true: 0, false: 2}[want] {
			t.Errorf(
				"class name of %d bytes %.20q: Validate() = %v, want valid %v for both kinds",
				len(name),
				name,
				err,
				want,
			)
		}
	}
}
