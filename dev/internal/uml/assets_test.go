package uml

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindHackDir(t *testing.T) {
	// Tests run in the package directory; hack/uml is three levels up.
	dir, err := findHackDir("")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{initScriptName, shimSourceName} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("found %s without %s: %v", dir, name, err)
		}
	}
	if _, err := findHackDir(t.TempDir()); err == nil {
		t.Error("findHackDir accepted a directory without guest-init.sh")
	}
}
