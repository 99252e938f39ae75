package driver

import (
	"slices"
	"testing"
)

func TestFormatSourceNodes(t *testing.T) {
	tests := []struct {
		nodes []string
		want  string
	}{
		{nil, ""},
		{[]string{""}, ""},
		{[]string{"b", "a", "b", "", "c"}, "a,b,c"},
		{[]string{"node-1"}, "node-1"},
	}
	for _, tt := range tests {
		if got := FormatSourceNodes(tt.nodes); got != tt.want {
			t.Errorf("FormatSourceNodes(%q) = %q, want %q", tt.nodes, got, tt.want)
		}
	}
}

func TestSourceNodes(t *testing.T) {
	tests := []struct {
		value string
		set   bool
		want  []string
	}{
		{set: false, want: nil},
		{value: "", set: true, want: nil},
		{value: " , ,", set: true, want: nil},
		{value: "a,b", set: true, want: []string{"a", "b"}},
		{value: " a , b,", set: true, want: []string{"a", "b"}},
	}
	for _, tt := range tests {
		annotations := map[string]string{"capacity.topolvm.io/ssd": "1"}
		if tt.set {
			annotations[AnnotationSourceNodes] = tt.value
		}
		if got := SourceNodes(annotations); !slices.Equal(got, tt.want) {
			t.Errorf("SourceNodes(%q) = %q, want %q", tt.value, got, tt.want)
		}
	}
	if got := SourceNodes(
		map[string]string{AnnotationSourceNodes: FormatSourceNodes([]string{"y", "x"})},
	); !slices.Equal(
		got,
		[]string{"x", "y"},
	) {
		t.Errorf("round trip: %q", got)
	}
}
