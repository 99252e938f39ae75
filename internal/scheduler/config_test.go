package scheduler

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name        string
		yaml        string
		want        Config
		wantUnknown []string
		wantErr     string
	}{
		{name: "empty file keeps the defaults", yaml: "", want: DefaultConfig()},
		{
			name: "TopoLVM's documented example",
			yaml: "default-divisor: 10\ndivisors:\n  ssd: 5\n  hdd: 10\n",
			want: Config{Listen: DefaultListen, DefaultDivisor: 10, Divisors: map[string]float64{"ssd": 5, "hdd": 10}},
		},
		{
			name: "TopoLVM chart's file",
			yaml: "listen: \"localhost:9251\"\ndefault-divisor: 1\nprofiling-bind-address: :6060\n",
			want: Config{Listen: "localhost:9251", DefaultDivisor: 1, ProfilingBindAddress: ":6060"},
		},
		{
			name:        "unknown keys are returned, not refused",
			yaml:        "divisor: 3\nlisten: :1\nzzz: 1\n",
			want:        Config{Listen: ":1", DefaultDivisor: 1},
			wantUnknown: []string{"divisor", "zzz"},
		},
		{name: "zero default divisor", yaml: "default-divisor: 0\n", wantErr: "default-divisor 0"},
		{name: "negative divisor", yaml: "divisors: {ssd: -2}\n", wantErr: `divisors["ssd"] -2`},
		{name: "infinite divisor", yaml: "divisors: {ssd: .inf}\n", wantErr: "parse scheduler config"},
		{name: "NaN divisor", yaml: "divisors: {ssd: .nan}\n", wantErr: "parse scheduler config"},
		{name: "not a number", yaml: "default-divisor: many\n", wantErr: "parse scheduler config"},
		{name: "not a map", yaml: "- 1\n", wantErr: "parse scheduler config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, unknown, err := ParseConfig([]byte(tt.yaml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Listen != tt.want.Listen || got.DefaultDivisor != tt.want.DefaultDivisor ||
				got.ProfilingBindAddress != tt.want.ProfilingBindAddress || !maps.Equal(got.Divisors, tt.want.Divisors) {
				t.Errorf("config %+v, want %+v", got, tt.want)
			}
			if !slices.Equal(unknown, tt.wantUnknown) {
				t.Errorf("unknown keys %v, want %v", unknown, tt.wantUnknown)
			}
		})
	}
}
