package monitoring

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

const root = "../../.."

// TestFilesUseOnlyExportedMetrics is the check of make verify.
func TestFilesUseOnlyExportedMetrics(t *testing.T) {
	unknown, err := Unknown(root)
	if err != nil {
		t.Fatal(err)
	}
	for f, names := range unknown {
		t.Errorf("%s uses metrics that lvms does not export: %v (exported: %v)", f, names, Exported())
	}
}

// TestTheCheckCanFail: a dashboard naming a metric nobody exports is caught, and so is a name that
// only looks like ours.
func TestTheCheckCanFail(t *testing.T) {
	dir := t.TempDir()
	for _, f := range Files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == Files[1] {
			b = append(b, []byte(`{"expr": "rate(lvms_volumes_created_total[5m]) + node_filesystem_avail_bytes{}"}`)...)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	unknown, err := Unknown(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := unknown[Files[1]]
	for _, want := range []string{"lvms_volumes_created_total", "node_filesystem_avail_bytes"} {
		if !slices.Contains(got, want) {
			t.Errorf("unknown names %v miss %s", got, want)
		}
	}
	if len(unknown[Files[0]]) != 0 {
		t.Errorf("the untouched rules file: %v", unknown[Files[0]])
	}
}

func TestExportedHasEveryFamily(t *testing.T) {
	names := Exported()
	for _, want := range []string{
		"topolvm_volumegroup_size_bytes", "topolvm_thinpool_data_percent", "lvms_orphan_logical_volumes",
		"lvms_host_commands_total", "lvms_host_command_duration_seconds_bucket", "lvms_csi_operations_total",
		"lvms_csi_phase_duration_seconds_bucket", "lvms_lvmcluster_state", "lvms_logical_volumes",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("Exported() lacks %s: %v", want, names)
		}
	}
}
