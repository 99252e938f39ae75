package main

import (
	"slices"
	"testing"

	"github.com/lvm-operator/lvm-operator/dev/internal/uml"
)

func TestParseDisks(t *testing.T) {
	got, err := parseDisks("2x1G,512M:ro")
	if err != nil {
		t.Fatal(err)
	}
	want := []uml.Disk{{Size: 1 << 30}, {Size: 1 << 30}, {Size: 512 << 20, ReadOnly: true}}
	if !slices.Equal(got, want) {
		t.Errorf("parseDisks = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "0x1G", "ax1G", "1G,", "2x"} {
		if _, err := parseDisks(bad); err == nil {
			t.Errorf("parseDisks(%q) accepted it", bad)
		}
	}
}
