package lvmd

import (
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// A thin class offers the stricter of the overprovision ratio's room and the ratio times the pool's
// unwritten data space.
func TestThinFreeBytes(t *testing.T) {
	const gib = 1 << 30
	tests := []struct {
		name        string
		dataPercent float64
		virtual     uint64
		ratio       float64
		want        uint64
	}{
		{name: "empty pool: the ratio's room", ratio: 10, want: 100 * gib},
		{name: "virtual sizes taken off", virtual: 30 * gib, ratio: 10, want: 70 * gib},
		{name: "written data within the ratio's room", dataPercent: 50, virtual: 80 * gib, ratio: 10, want: 20 * gib},
		{name: "nearly full by data, the ratio says 90 GiB", dataPercent: 95, virtual: 10 * gib, ratio: 10,
			want: 5 * gib},
		{name: "no overprovisioning", dataPercent: 40, virtual: 5 * gib, ratio: 1, want: 5 * gib},
		{name: "full pool", dataPercent: 100, ratio: 10, want: 0},
		{name: "lvm2 above 100 %", dataPercent: 100.5, ratio: 10, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := lvm.LV{Name: "pool", Size: 10 * gib, DataPercent: tt.dataPercent}
			got := thinFreeBytes(pool, tt.virtual, tt.ratio)
			if got != tt.want {
				t.Fatalf("free = %d GiB (%d), want %d GiB", got/gib, got, tt.want/gib)
			}
		})
	}
}
