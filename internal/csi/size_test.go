package csi

import (
	"errors"
	"strings"
	"testing"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestRequestedSize(t *testing.T) {
	tests := []struct {
		name     string
		required int64
		limit    int64
		minimum  int64
		want     int64
		wantErr  bool
	}{
		{"zero is 1Gi", 0, 0, MinSizeExt4, GiB, false},
		{"zero capped by limit", 0, 512 * MiB, MinSizeExt4, 512 * MiB, false},
		{"rounded up to 4096", 1 + 100*MiB, 0, MinSizeExt4, 100*MiB + 4096, false},
		{"raised to minimum", 1, 0, MinSizeXFS, MinSizeXFS, false},
		{"block minimum", 1, 0, MinSizeBlock, 8 * MiB, false},
		{"exact", 2 * GiB, 2 * GiB, MinSizeExt4, 2 * GiB, false},
		{"required above limit", 2 * GiB, GiB, MinSizeExt4, 0, true},
		{"limit below minimum", 0, 100 * MiB, MinSizeXFS, 0, true},
		{"rounding exceeds limit", 100*MiB + 1, 100*MiB + 2, MinSizeExt4, 0, true},
		{"negative", -1, 0, MinSizeExt4, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RequestedSize(&spec.CapacityRange{RequiredBytes: tt.required, LimitBytes: tt.limit}, tt.minimum)
			if tt.wantErr {
				if !errors.Is(err, ErrOutOfRange) {
					t.Fatalf("got %d, %v; want ErrOutOfRange", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
	if got, err := RequestedSize(nil, MinSizeBlock); err != nil || got != GiB {
		t.Errorf("nil range: got %d, %v; want 1Gi", got, err)
	}
}

func TestMinimumSize(t *testing.T) {
	tests := []struct {
		fs    string
		block bool
		want  int64
	}{
		{"", true, 8 * MiB}, {FSExt4, false, 32 * MiB}, {FSXFS, false, 300 * MiB}, {FSBtrfs, false, 200 * MiB},
	}
	for _, tt := range tests {
		if got := MinimumSize(tt.fs, tt.block); got != tt.want {
			t.Errorf("MinimumSize(%q, %v) = %d, want %d", tt.fs, tt.block, got, tt.want)
		}
	}
}

func capability(mode spec.VolumeCapability_AccessMode_Mode, fs string, block bool) *spec.VolumeCapability {
	c := &spec.VolumeCapability{AccessMode: &spec.VolumeCapability_AccessMode{Mode: mode}}
	if block {
		c.AccessType = &spec.VolumeCapability_Block{Block: &spec.VolumeCapability_BlockVolume{}}
	} else {
		c.AccessType = &spec.VolumeCapability_Mount{Mount: &spec.VolumeCapability_MountVolume{FsType: fs}}
	}
	return c
}

func TestValidateCapabilities(t *testing.T) {
	const (
		snw  = spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
		snsw = spec.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
	)
	tests := []struct {
		name string
		caps []*spec.VolumeCapability
		ok   bool
	}{
		{"ext4 RWO", []*spec.VolumeCapability{capability(snw, "ext4", false)}, true},
		{"xfs RWOP", []*spec.VolumeCapability{capability(snsw, "xfs", false)}, true},
		{"default fs", []*spec.VolumeCapability{capability(snw, "", false)}, true},
		{"block", []*spec.VolumeCapability{capability(snsw, "", true)}, true},
		{"none", nil, false},
		{"nil", []*spec.VolumeCapability{nil}, false},
		{
			"RWX",
			[]*spec.VolumeCapability{capability(spec.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, "", true)},
			false,
		},
		{
			"single-node multi-writer (ReadWriteOnce)",
			[]*spec.VolumeCapability{
				capability(spec.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER, "ext4", false),
			},
			true,
		},
		{"ntfs", []*spec.VolumeCapability{capability(snw, "ntfs", false)}, false},
		{"no access type", []*spec.VolumeCapability{{AccessMode: &spec.VolumeCapability_AccessMode{Mode: snw}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateCapabilities(tt.caps)
			if tt.ok != (err == nil) {
				t.Fatalf("got %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidCapability) {
				t.Fatalf("%v does not wrap ErrInvalidCapability", err)
			}
		})
	}
}

func TestVolumeLocks(t *testing.T) {
	var l VolumeLocks
	releaseA, errA := l.Lock("a")
	_, errB := l.Lock("b")
	if errA != nil || errB != nil {
		t.Fatalf("free locks were refused: %v, %v", errA, errB)
	}
	_, err := l.Lock("a")
	if status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "a is already in progress") {
		t.Fatalf("a held lock: %v, want Aborted naming it", err)
	}
	releaseA()
	if _, err := l.Lock("a"); err != nil {
		t.Fatalf("a released lock was refused: %v", err)
	}
}
