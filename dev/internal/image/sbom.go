package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"time"
)

// SBOM describes what an image is made of: its Debian packages and the Go modules of its
// binaries. It is written as an SPDX 2.3 JSON document.
type SBOM struct {
	// Image is the image reference the document describes.
	Image string
	// Version is the image's version (its tag for third-party tools).
	Version string
	Created time.Time
	Debs    []Deb
	// Binaries are the Go build information of the Go programs in the image, by path.
	Binaries []GoBinary
}

// GoBinary is a Go program in an image and its build information.
type GoBinary struct {
	Path string
	Info *debug.BuildInfo
}

type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name                  string            `json:"name"`
	SPDXID                string            `json:"SPDXID"`
	VersionInfo           string            `json:"versionInfo,omitempty"`
	Supplier              string            `json:"supplier,omitempty"`
	DownloadLocation      string            `json:"downloadLocation"`
	FilesAnalyzed         bool              `json:"filesAnalyzed"`
	PackageFileName       string            `json:"packageFileName,omitempty"`
	Checksums             []spdxChecksum    `json:"checksums,omitempty"`
	LicenseConcluded      string            `json:"licenseConcluded"`
	LicenseDeclared       string            `json:"licenseDeclared"`
	CopyrightText         string            `json:"copyrightText"`
	PrimaryPackagePurpose string            `json:"primaryPackagePurpose,omitempty"`
	ExternalRefs          []spdxExternalRef `json:"externalRefs,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

const noAssertion = "NOASSERTION"

var spdxIDChars = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// sbomBuilder hands out unique SPDX identifiers.
type sbomBuilder struct {
	doc  spdxDocument
	used map[string]bool
}

func (b *sbomBuilder) add(p spdxPackage, kind string) string {
	id := "SPDXRef-" + kind + "-" + spdxIDChars.ReplaceAllString(p.Name, "-")
	for n := 2; b.used[id]; n++ {
		id = fmt.Sprintf("SPDXRef-%s-%s-%d", kind, spdxIDChars.ReplaceAllString(p.Name, "-"), n)
	}
	b.used[id] = true
	p.SPDXID = id
	if p.DownloadLocation == "" {
		p.DownloadLocation = noAssertion
	}
	p.LicenseConcluded, p.LicenseDeclared, p.CopyrightText = noAssertion, noAssertion, noAssertion
	b.doc.Packages = append(b.doc.Packages, p)
	return id
}

func (b *sbomBuilder) relate(from, rel, to string) {
	b.doc.Relationships = append(b.doc.Relationships, spdxRelationship{from, rel, to})
}

// JSON returns the SPDX 2.3 document, indented. It depends only on the SBOM's fields, so an
// unchanged image has an unchanged SBOM; the document namespace is derived from the contents.
func (s SBOM) JSON() ([]byte, error) {
	name := s.Image
	if i := strings.LastIndexAny(name, ":@"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	b := &sbomBuilder{used: map[string]bool{}, doc: spdxDocument{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT", Name: s.Image,
		CreationInfo: spdxCreationInfo{
			Created:  s.Created.UTC().Format(time.RFC3339),
			Creators: []string{"Organization: lvm-operator", "Tool: lvms-dev-image"},
		},
	}}
	img := b.add(spdxPackage{
		Name: name, VersionInfo: s.Version, PrimaryPackagePurpose: "CONTAINER",
		Supplier: "Organization: lvm-operator",
	}, "image")
	b.relate("SPDXRef-DOCUMENT", "DESCRIBES", img)
	for _, d := range s.Debs {
		id := b.add(spdxPackage{
			Name: d.Name, VersionInfo: d.Version, Supplier: "Organization: Debian",
			DownloadLocation: "https://deb.debian.org/debian/" + d.Filename,
			PackageFileName:  d.Filename, PrimaryPackagePurpose: "OPERATING-SYSTEM",
			Checksums: []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: d.SHA256}},
			ExternalRefs: []spdxExternalRef{purl(fmt.Sprintf("pkg:deb/debian/%s@%s?arch=%s&distro=debian-12",
				d.Name, strings.ReplaceAll(d.Version, ":", "%3A"), d.Arch))},
		}, "deb")
		b.relate(img, "CONTAINS", id)
	}
	for _, bin := range s.Binaries {
		b.addBinary(img, bin)
	}
	sum := sha256.New()
	for _, p := range b.doc.Packages {
		fmt.Fprintf(sum, "%s %s\n", p.SPDXID, p.VersionInfo)
	}
	b.doc.DocumentNamespace = fmt.Sprintf("https://github.com/lvm-operator/lvm-operator/spdx/%s-%s",
		spdxIDChars.ReplaceAllString(s.Image, "-"), hex.EncodeToString(sum.Sum(nil))[:16])
	out, err := json.MarshalIndent(b.doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode SPDX document: %w", err)
	}
	return append(out, '\n'), nil
}

func (b *sbomBuilder) addBinary(img string, bin GoBinary) {
	main := bin.Info.Main
	version := main.Version
	if version == "" || version == "(devel)" {
		version = settingOr(bin.Info, "vcs.revision", version)
	}
	id := b.add(spdxPackage{
		Name: main.Path, VersionInfo: version, PackageFileName: bin.Path,
		PrimaryPackagePurpose: "APPLICATION",
		ExternalRefs:          []spdxExternalRef{purl(goPurl(main.Path, version))},
	}, "go")
	b.relate(img, "CONTAINS", id)
	std := b.add(spdxPackage{
		Name: "stdlib", VersionInfo: bin.Info.GoVersion, PrimaryPackagePurpose: "LIBRARY",
		ExternalRefs: []spdxExternalRef{purl(goPurl("stdlib", bin.Info.GoVersion))},
	}, "go")
	b.relate(id, "DEPENDS_ON", std)
	for _, m := range bin.Info.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		dep := b.add(spdxPackage{
			Name: m.Path, VersionInfo: m.Version, PrimaryPackagePurpose: "LIBRARY",
			ExternalRefs: []spdxExternalRef{purl(goPurl(m.Path, m.Version))},
		}, "go")
		b.relate(id, "DEPENDS_ON", dep)
	}
}

func settingOr(bi *debug.BuildInfo, key, def string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return def
}

func goPurl(module, version string) string {
	return "pkg:golang/" + module + "@" + version
}

func purl(locator string) spdxExternalRef {
	return spdxExternalRef{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: locator}
}
