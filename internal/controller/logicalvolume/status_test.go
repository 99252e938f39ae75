package logicalvolume

import (
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvmd"
)

// TestDeviceSize: the status reports the size of the device a consumer gets, not that of a thick
// snapshot's copy-on-write store (which lvmd reports and which holds metadata too).
func TestDeviceSize(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name string
		lv   lvmd.LV
		spec int64
		want uint64
	}{
		{"plain LV", lvmd.LV{Size: 68 * mib}, 64 * mib, 68 * mib},
		{"thin snapshot", lvmd.LV{Size: 64 * mib, Origin: "o", ThinPool: "pool"}, 64 * mib, 64 * mib},
		{"thick snapshot: store larger than the device", lvmd.LV{Size: 68 * mib, Origin: "o"}, 64 * mib, 64 * mib},
		{"never more than lvmd reports", lvmd.LV{Size: 8 * mib, Origin: "o"}, 64 * mib, 8 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := deviceSize(&tt.lv, tt.spec); got != tt.want {
				t.Errorf("deviceSize = %d, want %d", got, tt.want)
			}
		})
	}
}
