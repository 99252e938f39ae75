//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goldenDir holds what `kubectl lvms` prints on the suite's cluster, with the values that change
// from run to run (fill levels, free bytes, UUIDs) masked by normalize.
const goldenDir = "testdata/kubectl-lvms"

// keepLines keeps the lines matching re.
func keepLines(re string) func(string) string {
	return func(s string) string { return linesMatching(s, re) + "\n" }
}

var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	// Fill levels and their bars.
	{regexp.MustCompile(`\[[#-]{10}\] +[0-9.]+%`), "[BAR] P%"},
	{regexp.MustCompile(`\b[0-9]+\.[0-9]%`), "P%"},
	// LV names and PV names carry UUIDs.
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "UUID"},
	// Free space depends on what other tests left behind for a moment, and so does the node with the
	// most of it.
	{regexp.MustCompile(`(?m)[0-9.]+[KMGT]?i?( \([0-9]+ bytes\))? free([,;]|$)`), "FREE free$2"},
	// Other tests' volumes may still be on the nodes (their device-mapper devices are counted).
	{regexp.MustCompile(`[0-9]+ LVM logical volume\(s\) left out`), "N LVM logical volume(s) left out"},
	// Their Block volumes' pods may still be going away, with the loop devices the kubelet attached.
	{regexp.MustCompile(`(?m)^[0-9]+ loop device\(s\) of the kubelet left out .*\n`), ""},
	{
		regexp.MustCompile(`the largest is [0-9.]+[KMGT]?i?( \([0-9]+ bytes\))? on node-[0-9]+`),
		"the largest is FREE on NODE",
	},
	// The claim's event lists the nodes with the most free space first.
	{regexp.MustCompile(`node-[0-9]+: FREE free`), "NODE: FREE free"},
	// The FREE column of kubectl lvms status.
	{regexp.MustCompile(`(?m)^(node-[0-9]+ +[a-z-]+ +[A-Za-z]+ +[0-9.]+[KMGT]?i) +[0-9.]+[KMGT]?i `), "$1 FREE "},
}

// normalize masks what changes between runs, and the test's namespace.
func normalize(s, ns string) string {
	s = strings.ReplaceAll(s, ns, "NAMESPACE")
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	// Columns realign around masked values: compare words, one line per line.
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n") + "\n"
}

// compareGolden fails unless got equals the golden file; E2E_UPDATE_GOLDEN=1 writes it instead.
func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if os.Getenv("E2E_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file: %v (E2E_UPDATE_GOLDEN=1 writes it)", err)
	}
	if string(want) != got {
		t.Errorf("kubectl lvms output differs from %s:\n--- want\n%s--- got\n%s", path, want, got)
	}
	if strings.Contains(got, "Error") || strings.Contains(got, "error:") {
		t.Errorf("output reports an error:\n%s", got)
	}
}
