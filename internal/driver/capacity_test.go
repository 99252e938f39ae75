package driver

import (
	"maps"
	"strings"
	"testing"
)

func TestCapacityAnnotation(t *testing.T) {
	for dc, want := range map[string]string{
		"":          "capacity.topolvm.io/00default",
		"vg1":       "capacity.topolvm.io/vg1",
		"00default": "capacity.topolvm.io/00default",
	} {
		if got := CapacityAnnotation(dc); got != want {
			t.Errorf("CapacityAnnotation(%q) = %q, want %q", dc, got, want)
		}
	}
}

// Every reader of a node's capacity judges it by NodeFit: the scheduler extender's filter, the
// CSI controller (FreeBytes) and `kubectl lvms why` agree on every value.
func TestNodeFit(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		dc          string
		requested   uint64
		want        Fit
		wantFree    uint64
	}{
		{"room", map[string]string{"capacity.topolvm.io/thin": "2048"}, "thin", 1024, Fits, 2048},
		{"exactly", map[string]string{"capacity.topolvm.io/thin": "1024"}, "thin", 1024, Fits, 1024},
		{"too small", map[string]string{"capacity.topolvm.io/thin": "1023"}, "thin", 1024, TooSmall, 1023},
		{"nothing asked", map[string]string{"capacity.topolvm.io/thin": "0"}, "thin", 0, Fits, 0},
		{"other class only", map[string]string{"capacity.topolvm.io/thick": "1"}, "thin", 1, NoAnnotation, 0},
		{"default class", map[string]string{"capacity.topolvm.io/00default": "5"}, "", 5, Fits, 5},
		{"negative", map[string]string{"capacity.topolvm.io/thin": "-1"}, "thin", 0, Malformed, 0},
		{"unit", map[string]string{"capacity.topolvm.io/thin": "1Gi"}, "thin", 0, Malformed, 0},
		{"empty", map[string]string{"capacity.topolvm.io/thin": ""}, "thin", 0, Malformed, 0},
		{"largest", map[string]string{"capacity.topolvm.io/thin": "18446744073709551615"}, "thin",
			1 << 63, Fits, 1<<64 - 1},
		{"overflow", map[string]string{"capacity.topolvm.io/thin": "18446744073709551616"}, "thin", 0, Malformed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fit, free, err := NodeFit(tt.annotations, tt.dc, tt.requested)
			if fit != tt.want || free != tt.wantFree {
				t.Errorf("NodeFit = %s, %d; want %s, %d", fit, free, tt.want, tt.wantFree)
			}
			if (err != nil) != (tt.want == Malformed) {
				t.Errorf("NodeFit error %v; the verdict is %s", err, tt.want)
			}
			_, present, ferr := FreeBytes(tt.annotations, tt.dc)
			if present != (tt.want != NoAnnotation) || (ferr != nil) != (tt.want == Malformed) {
				t.Errorf("FreeBytes: present %v, err %v; the verdict is %s", present, ferr, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), CapacityAnnotation(tt.dc)) {
				t.Errorf("NodeFit error %q does not name the annotation", err)
			}
		})
	}
}

func TestRequests(t *testing.T) {
	got := Requests(map[string]string{
		"capacity.topolvm.io/thin":      "1073741824",
		"capacity.topolvm.io/00default": "0",
		"capacity.topolvm.io/":          "5",
		"capacity.topolvm.io/neg":       "-1",
		"capacity.topolvm.io/unit":      "1Gi",
		"capacity.topolvm.io/huge":      "9223372036854775808",
		"capacity.topolvm.io/max":       "9223372036854775807",
		"other/thin":                    "1",
	})
	want := map[string]uint64{"thin": 1 << 30, "00default": 0, "max": 1<<63 - 1}
	if !maps.Equal(got, want) {
		t.Errorf("Requests = %v, want %v", got, want)
	}
}

func TestFormatBytes(t *testing.T) {
	if got := FormatBytes(1 << 40); got != "1099511627776" {
		t.Errorf("FormatBytes = %q", got)
	}
	free, present, err := FreeBytes(map[string]string{CapacityAnnotation("x"): FormatBytes(42)}, "x")
	if free != 42 || !present || err != nil {
		t.Errorf("FreeBytes of FormatBytes = %d, %v, %v", free, present, err)
	}
}
