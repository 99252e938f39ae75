package image

import (
	"debug/elf"
	"os"
	"strings"
	"testing"
)

// hostDynamicBinary returns a dynamically linked program of the build host and the libraries
// it needs, or skips the test.
func hostDynamicBinary(t *testing.T) ([]byte, []string) {
	t.Helper()
	for _, p := range []string{"/usr/bin/true", "/bin/true", "/usr/bin/ls"} {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		libs, err := f.ImportedLibraries()
		_ = f.Close()
		if err == nil && len(libs) > 0 {
			return data, libs
		}
	}
	t.Skip("no dynamically linked host program to test with")
	return nil, nil
}

func TestCheckSharedLibs(t *testing.T) {
	data, libs := hostDynamicBinary(t)
	tree := NewTree()
	AddMergedUsrLinks(tree)
	tree.AddFile("usr/bin/tool", 0o755, data)
	tree.AddFile("usr/bin/script", 0o755, []byte("#!/bin/sh\n"))
	err := CheckSharedLibs(tree)
	if err == nil {
		t.Fatal("want an error: the tree has neither the loader nor the libraries")
	}
	for _, lib := range libs {
		if !strings.Contains(err.Error(), "/usr/bin/tool needs "+lib) {
			t.Errorf("error does not name %s: %v", lib, err)
		}
	}
	if !strings.Contains(err.Error(), "program interpreter") {
		t.Errorf("error does not name the missing program interpreter: %v", err)
	}

	// Debian's layout: libraries in /lib/x86_64-linux-gnu, the loader reached through /lib64.
	for _, lib := range libs {
		tree.AddFile("usr/lib/x86_64-linux-gnu/"+lib+".real", 0o644, []byte("lib"))
		tree.AddSymlink("usr/lib/x86_64-linux-gnu/"+lib, lib+".real")
	}
	tree.AddFile("usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 0o755, []byte("ld"))
	tree.AddSymlink("usr/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
	if err := CheckSharedLibs(tree); err != nil {
		t.Fatalf("complete tree: %v", err)
	}
}
