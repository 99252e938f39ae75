package placement

import "testing"

func TestFormatBytes(t *testing.T) {
	const ki, mi, gi = int64(1) << 10, int64(1) << 20, int64(1) << 30
	cases := []struct {
		in   int64
		want string
	}{
		{0, "0"},
		{512, "512"},
		{ki, "1Ki"},
		{1536, "1.5Ki"},
		{808 * mi, "808Mi"},
		{1023*mi + 1023*ki, "1Gi"}, // rounded up into the next unit
		{1023 * mi, "1023Mi"},
		{2 * gi, "2Gi"},
		{2200 * mi, "2.1Gi"},
		{7*gi + 900*mi, "7.9Gi"},
		{9*gi + 1000*mi, "10Gi"},
		{20472 * mi, "20Gi"}, // a 20Gi disk less lvm2's metadata
		{10 * gi, "10Gi"},
		{12*gi + 900*mi, "13Gi"},
		{5 << 40, "5Ti"},
		{-3 * mi, "-3Mi"},
	}
	for _, tc := range cases {
		if got := FormatBytes(tc.in); got != tc.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFormatBytesExact(t *testing.T) {
	const gi = int64(1) << 30
	cases := []struct {
		in   int64
		want string
	}{
		{0, "0 bytes"},
		{1023, "1023 bytes"},
		{1024, "1Ki (1024 bytes)"},
		{100 * gi, "100Gi (107374182400 bytes)"},
		{17041457152, "15.9Gi (17041457152 bytes)"},
		{2200 << 20, "2.1Gi (2306867200 bytes)"},
		{1023<<20 + 1000<<10, "1Gi (1073717248 bytes)"}, // 1023.98Mi rounds into the next unit
		{20472 << 20, "20Gi (21466447872 bytes)"},
		{-3 << 20, "-3Mi (-3145728 bytes)"},
	}
	for _, tc := range cases {
		if got := FormatBytesExact(tc.in); got != tc.want {
			t.Errorf("FormatBytesExact(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
