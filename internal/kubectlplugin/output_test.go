package kubectlplugin

import "testing"

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
