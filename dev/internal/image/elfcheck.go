package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"path"
	"strings"
)

// libraryDirs are where the dynamic loader of a Debian amd64 system looks for libraries when
// the ELF file names no RUNPATH (the multiarch directories are built into Debian's ld.so).
var libraryDirs = []string{
	"lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64", "usr/lib64", "lib", "usr/lib",
}

// Resolve returns the entry p refers to, following symlinks in every component as the kernel
// does (absolute targets from the root of the tree), or false.
func (t *Tree) Resolve(p string) (*Entry, bool) {
	p = cleanPath(p)
	for hops := 0; hops < 40; hops++ {
		parts := strings.Split(p, "/")
		restarted := false
		cur := ""
		for i, part := range parts {
			next := path.Join(cur, part)
			e, ok := t.entries[next]
			if !ok {
				return nil, false
			}
			if e.Type == tar.TypeSymlink {
				target := e.Link
				if !path.IsAbs(target) {
					target = path.Join(cur, target)
				}
				p = cleanPath(path.Join(append([]string{target}, parts[i+1:]...)...))
				restarted = true
				break
			}
			if i == len(parts)-1 {
				return e, true
			}
			if e.Type != tar.TypeDir {
				return nil, false
			}
			cur = next
		}
		if !restarted {
			return nil, false
		}
	}
	return nil, false
}

// CheckSharedLibs checks that every dynamically linked ELF file in t finds its program
// interpreter and every library it names in DT_NEEDED, in its RUNPATH/RPATH or in the default
// library directories. It catches a package missing from an image's dependency closure; the
// image-tagged test also runs the tools.
func CheckSharedLibs(t *Tree) error {
	var errs []error
	for _, e := range t.Entries() {
		if e.Type != tar.TypeReg || !bytes.HasPrefix(e.Data, []byte(elf.ELFMAG)) {
			continue
		}
		if err := t.checkELF(e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (t *Tree) checkELF(e *Entry) error {
	f, err := elf.NewFile(bytes.NewReader(e.Data))
	if err != nil {
		return fmt.Errorf("/%s: not a readable ELF file: %w", e.Path, err)
	}
	defer f.Close()
	var errs []error
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		interp := make([]byte, prog.Filesz)
		if _, err := prog.ReadAt(interp, 0); err != nil {
			return fmt.Errorf("/%s: read PT_INTERP: %w", e.Path, err)
		}
		name := strings.TrimRight(string(interp), "\x00")
		if _, ok := t.Resolve(name); !ok {
			errs = append(errs, fmt.Errorf("/%s: program interpreter %s is not in the image", e.Path, name))
		}
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("/%s: read DT_NEEDED: %w", e.Path, err)
	}
	dirs := runPaths(f, path.Dir(e.Path))
	for _, lib := range needed {
		if !t.findLibrary(lib, dirs) {
			errs = append(errs, fmt.Errorf("/%s needs %s, which is not in the image", e.Path, lib))
		}
	}
	return errors.Join(errs...)
}

// runPaths returns the RUNPATH (or RPATH) directories of f, $ORIGIN expanded, then the defaults.
func runPaths(f *elf.File, origin string) []string {
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, err := f.DynString(tag)
		if err != nil {
			continue
		}
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", "/"+origin), "$ORIGIN", "/"+origin)
				dirs = append(dirs, d)
			}
		}
	}
	return append(dirs, libraryDirs...)
}

func (t *Tree) findLibrary(lib string, dirs []string) bool {
	if strings.Contains(lib, "/") {
		_, ok := t.Resolve(lib)
		return ok
	}
	for _, d := range dirs {
		if e, ok := t.Resolve(path.Join(d, lib)); ok && (e.Type == tar.TypeReg || e.Type == tar.TypeLink) {
			return true
		}
	}
	return false
}
