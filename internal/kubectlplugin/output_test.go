package kubectlplugin

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
		if got := formatBytes(tc.in); got != tc.want {
			t.Errorf("formatBytes(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestUsageBar(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{0, "[----------] 0.0%"},
		{4.9, "[----------] 4.9%"},
		{5, "[#---------] 5.0%"},
		{70, "[#######---] 70.0%"},
		{97.3, "[##########] 97.3%"},
		{100, "[##########] 100.0%"},
		{120, "[##########] 120.0%"}, // a bad report does not break the bar
	}
	for _, tc := range cases {
		if got := usageBar(tc.in); got != tc.want {
			t.Errorf("usageBar(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
