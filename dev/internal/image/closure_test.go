package image

import (
	"slices"
	"testing"
)

// aptDepends is trimmed `apt-cache depends --recurse --no-recommends ...` output of Debian 12.
const aptDepends = `lvm2
  Depends: libaio1
  Depends: libc6
  Depends: libsystemd0
    libelogind0
  Depends: lsb-base
    sysvinit-utils
  Depends: dmsetup
xfsprogs
  Depends: libc6
  Depends: libicu72
  Depends: <python3:any>
    python3
libaio1
  Depends: libc6
libc6
  Depends: libgcc-s1
libsystemd0
  Depends: libc6
libelogind0
  Depends: libc6
lsb-base
sysvinit-utils
  PreDepends: libc6
dmsetup
  Depends: libc6
 |Depends: debconf
  Depends: <debconf-2.0>
    cdebconf
    debconf
libgcc-s1
  Depends: libc6
libicu72
  Depends: libc6
python3
  PreDepends: python3-minimal
python3-minimal
  Depends: libc6
debconf
  PreDepends: perl-base
cdebconf
  Depends: libc6
perl-base
  PreDepends: libc6
<python3:any>
    python3
<debconf-2.0>
    cdebconf
    debconf
`

func TestClosure(t *testing.T) {
	g, err := parseDepends(aptDepends)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		roots   []string
		exclude map[string]string
		want    []string
	}{{
		name:  "everything",
		roots: []string{"lvm2", "xfsprogs"},
		want: []string{"debconf", "dmsetup", "libaio1", "libc6", "libgcc-s1", "libicu72", "libsystemd0",
			"lsb-base", "lvm2", "perl-base", "python3", "python3-minimal", "xfsprogs"},
	}, {
		name:    "excluded packages keep their dependencies out; the next alternative is taken",
		roots:   []string{"lvm2", "xfsprogs"},
		exclude: map[string]string{"python3": "", "libicu72": "", "debconf": "", "lsb-base": ""},
		want:    []string{"cdebconf", "dmsetup", "libaio1", "libc6", "libgcc-s1", "libsystemd0", "lvm2", "xfsprogs"},
	}, {
		name:    "all alternatives excluded",
		roots:   []string{"dmsetup"},
		exclude: map[string]string{"debconf": "", "cdebconf": ""},
		want:    []string{"dmsetup", "libc6", "libgcc-s1"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := g.closure(tc.roots, tc.exclude)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("closure = %v\nwant      %v", got, tc.want)
			}
		})
	}
}

func TestClosureUnknownPackage(t *testing.T) {
	g, err := parseDepends(aptDepends)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.closure([]string{"nonexistent"}, nil); err == nil {
		t.Fatal("want an error for a package apt-cache did not describe")
	}
}

func TestParseDependsErrors(t *testing.T) {
	for _, in := range []string{"  Depends: libc6\n", "lvm2\n  Depends libc6\n"} {
		if _, err := parseDepends(in); err == nil {
			t.Errorf("parseDepends(%q): want an error", in)
		}
	}
}

func TestParseShow(t *testing.T) {
	out := `Package: lvm2
Version: 2.03.16-2
Architecture: amd64
Description: Linux Logical Volume Manager
 This is LVM2.
Filename: pool/main/l/lvm2/lvm2_2.03.16-2_amd64.deb
SHA256: 3b1a

Package: libcrypt1
Version: 1:4.4.33-2
Architecture: amd64
Filename: pool/main/libx/libxcrypt/libcrypt1_4.4.33-2_amd64.deb
SHA256: 9c2e

`
	debs, err := parseShow(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(debs) != 2 || debs[0].Name != "libcrypt1" || debs[0].Version != "1:4.4.33-2" ||
		debs[1].SHA256 != "3b1a" || debs[1].Filename != "pool/main/l/lvm2/lvm2_2.03.16-2_amd64.deb" {
		t.Fatalf("parseShow = %+v", debs)
	}
	if _, err := parseShow("Package: x\nVersion: 1\n"); err == nil {
		t.Fatal("want an error for a stanza without SHA256 and Filename")
	}
}

func FuzzParseDepends(f *testing.F) {
	f.Add(aptDepends)
	f.Fuzz(func(t *testing.T, in string) {
		g, err := parseDepends(in)
		if err != nil {
			return
		}
		for p := range g {
			got, err := g.closure([]string{p}, map[string]string{"x": ""})
			if err == nil && !slices.Contains(got, p) {
				t.Fatalf("closure of %q does not contain it: %v", p, got)
			}
		}
	})
}

func TestParseDependsSkipsOtherKinds(t *testing.T) {
	g, err := parseDepends("a\n |Recommends: r1\n  Recommends: <r2>\n    p\n  Depends: b\n    bb\nb\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(g["a"]) != 1 || len(g["a"][0]) != 1 || g["a"][0][0].name != "b" ||
		!slices.Equal(g["a"][0][0].providers, []string{"bb"}) {
		t.Fatalf("graph of a = %+v, want one dependency b provided by bb", g["a"])
	}
}
