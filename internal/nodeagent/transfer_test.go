package nodeagent

import "testing"

func TestCheckpointBytes(t *testing.T) {
	for _, tt := range []struct{ size, want uint64 }{
		{32 << 20, 4 << 20},
		{96 << 20, 6 << 20},
		{1 << 30, 64 << 20},
		{100 << 30, 256 << 20},
		{96<<20 + 12345, 6 << 20},
	} {
		if got := checkpointBytes(tt.size); got != tt.want {
			t.Errorf("checkpointBytes(%d) = %d, want %d", tt.size, got, tt.want)
		}
	}
}
