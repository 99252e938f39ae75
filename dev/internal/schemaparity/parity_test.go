package schemaparity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The upstream CRDs (test/upstream-crds, whose README names the commits) and ours (config/crd/bases).
const (
	lvmsCommit    = "openshift/lvm-operator de3cc31a2b474487952c3ae03ad3725107b69355 (main, 2026-08-22)"
	topolvmCommit = "topolvm/topolvm v0.41.0 (4e49dc93bf57841d1b6134bef7e26038180a9dfb)"
)

var pairs = []struct{ upstream, ours, from string }{
	{"lvms/lvm.topolvm.io_lvmclusters.yaml", "lvm.topolvm.io_lvmclusters.yaml", lvmsCommit},
	{"lvms/lvm.topolvm.io_lvmvolumegroups.yaml", "lvm.topolvm.io_lvmvolumegroups.yaml", lvmsCommit},
	{"lvms/lvm.topolvm.io_lvmvolumegroupnodestatuses.yaml", "lvm.topolvm.io_lvmvolumegroupnodestatuses.yaml",
		lvmsCommit},
	{"topolvm/topolvm.io_logicalvolumes.yaml", "topolvm.io_logicalvolumes.yaml", topolvmCommit},
}

var root = filepath.Join("..", "..", "..")

// TestSchemaParity compares our four CRDs with upstream's, field by field, and fails on every
// difference that docs/api-compat.md's schema-parity table does not list, and on every row of that
// table that no longer matches a difference (so that the table says what is true).
func TestSchemaParity(t *testing.T) {
	f, err := os.Open(filepath.Join(root, "docs", "api-compat.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	deviations, err := ReadDeviations(f)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]int{}
	total := 0
	for _, p := range pairs {
		u, err := ReadCRD(filepath.Join(root, "test", "upstream-crds", p.upstream))
		if err != nil {
			t.Fatal(err)
		}
		o, err := ReadCRD(filepath.Join(root, "config", "crd", "bases", p.ours))
		if err != nil {
			t.Fatal(err)
		}
		found := Compare(u, o)
		total += len(found)
		listed := 0
		for _, fd := range found {
			d := covering(deviations, fd)
			if d == "" {
				t.Errorf(
					"%s: not listed in docs/api-compat.md (Schema parity): mend it, or add a row with the reason",
					fd,
				)
				continue
			}
			used[d]++
			listed++
		}
		t.Logf("%s against %s: %d differences, %d listed", u.Spec.Names.Kind, p.from, len(found), listed)
	}
	for _, d := range deviations {
		if used[d.ID] == 0 {
			t.Errorf("docs/api-compat.md row %s matches no difference any more: remove it", d.ID)
		}
	}
	t.Logf("%d differences, %d rows", total, len(deviations))
}

func covering(ds []Deviation, f Finding) string {
	for _, d := range ds {
		if d.Covers(f) {
			return d.ID
		}
	}
	return ""
}

// TestCompareFindsWhatDiffers: a field, an enum, a default, a bound, a requirement and a rule that
// upstream has and ours lacks are each found; identical schemas, int-or-string types and an equality
// written the other way round are not.
func TestCompareFindsWhatDiffers(t *testing.T) {
	up, err := ReadCRD(filepath.Join(root, "test", "upstream-crds", "lvms", "lvm.topolvm.io_lvmvolumegroups.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := Compare(up, up.DeepCopy()); len(got) != 0 {
		t.Fatalf("a CRD differs from itself: %v", got)
	}
	ours := up.DeepCopy()
	spec := ours.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	tp := spec.Properties["thinPoolConfig"]
	delete(tp.Properties, "overprovisionRatio")
	policy := tp.Properties["chunkSizeCalculationPolicy"]
	policy.Enum, policy.Default = policy.Enum[:1], nil
	tp.Properties["chunkSizeCalculationPolicy"] = policy
	sp := tp.Properties["sizePercent"]
	sp.Maximum = new(50.0)
	tp.Properties["sizePercent"] = sp
	tp.Required = nil
	spec.Properties["thinPoolConfig"] = tp
	for i := range spec.XValidations {
		spec.XValidations[i].Rule = "true"
	}
	ours.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	var got []string
	for _, f := range Compare(up, ours) {
		got = append(got, f.Path+" "+strings.Fields(f.Check)[0])
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{
		".spec.thinPoolConfig.overprovisionRatio field", ".spec.thinPoolConfig.chunkSizeCalculationPolicy enum",
		".spec.thinPoolConfig.chunkSizeCalculationPolicy default", ".spec.thinPoolConfig.sizePercent maximum",
		".spec.thinPoolConfig.name required", ".spec rule",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("not found: %s; found:\n%s", want, joined)
		}
	}
	if squash("oldSelf == self") != squash("self  ==  oldSelf") {
		t.Error("an equality written the other way round differs")
	}
}

// TestReadDeviations reads a row with several kinds, globbed paths and checks.
func TestReadDeviations(t *testing.T) {
	ds, err := ReadDeviations(strings.NewReader("| P9 | LVMCluster, LVMVolumeGroup | `*.paths`, `.spec.x` | " +
		"`maxItems`, `rule` | why |\n| not a row |\n"))
	if err != nil || len(ds) != 1 {
		t.Fatalf("%v, %v", ds, err)
	}
	d := ds[0]
	for _, tc := range []struct {
		f    Finding
		want bool
	}{
		{Finding{Kind: "LVMVolumeGroup", Path: ".spec.deviceSelector.paths", Check: "maxItems"}, true},
		{Finding{Kind: "LVMCluster", Path: ".spec.x", Check: "rule self == oldSelf"}, true},
		{Finding{Kind: "LogicalVolume", Path: ".spec.x", Check: "maxItems"}, false},
		{Finding{Kind: "LVMCluster", Path: ".spec.paths[]", Check: "maxItems"}, false},
		{Finding{Kind: "LVMCluster", Path: ".spec.x", Check: "enum"}, false},
	} {
		if got := d.Covers(tc.f); got != tc.want {
			t.Errorf("%s covered: %t, want %t", tc.f.Key(), got, tc.want)
		}
	}
}
