package image

import (
	"bytes"
	"encoding/json"
	"regexp"
	"runtime/debug"
	"testing"
)

func testSBOM() SBOM {
	return SBOM{
		Image: "ghcr.io/lvm-operator/lvms:v0.1.0", Version: "v0.1.0", Created: epoch,
		Debs: []Deb{
			{
				Name:     "lvm2",
				Version:  "2.03.16-2",
				Arch:     "amd64",
				SHA256:   "aa11",
				Filename: "pool/main/l/lvm2/lvm2_2.03.16-2_amd64.deb",
			},
			{
				Name:     "libcrypt1",
				Version:  "1:4.4.33-2",
				Arch:     "amd64",
				SHA256:   "bb22",
				Filename: "pool/main/libx/libxcrypt/libcrypt1_4.4.33-2_amd64.deb",
			},
		},
		Binaries: []GoBinary{{Path: "/usr/bin/lvms", Info: &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Main:      debug.Module{Path: Module, Version: "(devel)"},
			Deps: []*debug.Module{
				{Path: "github.com/spf13/cobra", Version: "v1.10.2"},
				{
					Path:    "k8s.io/api",
					Version: "v0.37.0",
					Replace: &debug.Module{Path: "k8s.io/api", Version: "v0.37.1"},
				},
			},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abc"}},
		}}},
	}
}

func TestSBOM(t *testing.T) {
	raw, err := testSBOM().JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc spdxDocument
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" ||
		doc.CreationInfo.Created != "2023-11-14T22:13:20Z" {
		t.Errorf("header: %+v %+v", doc.SPDXVersion, doc.CreationInfo)
	}
	byName := map[string]spdxPackage{}
	idOK := regexp.MustCompile(`^SPDXRef-[A-Za-z0-9.-]+$`)
	ids := map[string]bool{}
	for _, p := range doc.Packages {
		byName[p.Name] = p
		if !idOK.MatchString(p.SPDXID) || ids[p.SPDXID] {
			t.Errorf("SPDXID %q invalid or duplicate", p.SPDXID)
		}
		ids[p.SPDXID] = true
	}
	if p := byName["libcrypt1"]; p.VersionInfo != "1:4.4.33-2" || len(p.Checksums) != 1 ||
		p.Checksums[0].ChecksumValue != "bb22" ||
		p.ExternalRefs[0].ReferenceLocator != "pkg:deb/debian/libcrypt1@1%3A4.4.33-2?arch=amd64&distro=debian-12" {
		t.Errorf("libcrypt1: %+v", p)
	}
	if p := byName[Module]; p.VersionInfo != "0123abc" || p.PrimaryPackagePurpose != "APPLICATION" {
		t.Errorf("main module: %+v", p)
	}
	if p := byName["k8s.io/api"]; p.VersionInfo != "v0.37.1" {
		t.Errorf("replaced module: %+v", p)
	}
	for _, name := range []string{"ghcr.io/lvm-operator/lvms", "lvm2", "github.com/spf13/cobra", "stdlib"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no package %s", name)
		}
	}
	for _, r := range doc.Relationships {
		if !ids[r.SPDXElementID] && r.SPDXElementID != "SPDXRef-DOCUMENT" || !ids[r.RelatedSPDXElement] {
			t.Errorf("relationship to an unknown element: %+v", r)
		}
	}
	if len(doc.Relationships) != len(doc.Packages) {
		t.Errorf(
			"%d relationships for %d packages: every package is described or contained",
			len(doc.Relationships),
			len(doc.Packages),
		)
	}
}

func TestSBOMDeterministic(t *testing.T) {
	a, err := testSBOM().JSON()
	if err != nil {
		t.Fatal(err)
	}
	b, err := testSBOM().JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("the same SBOM encoded twice differs")
	}
	other := testSBOM()
	other.Debs[0].Version = "2.03.16-3"
	c, err := other.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var da, dc spdxDocument
	_ = json.Unmarshal(a, &da)
	_ = json.Unmarshal(c, &dc)
	if da.DocumentNamespace == dc.DocumentNamespace {
		t.Fatal("different contents share a document namespace")
	}
}
