package uml

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Files under the repository's hack/uml directory.
const (
	initScriptName = "guest-init.sh"
	shimSourceName = "xstate-shim.c"
	hackSubdir     = "hack/uml"
)

// findHackDir returns the directory holding guest-init.sh and xstate-shim.c: dir if given,
// otherwise hack/uml in the nearest ancestor of the working directory that has one (tests run in
// their package directory, tools from the repository root).
func findHackDir(dir string) (string, error) {
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, initScriptName)); err != nil {
			return "", fmt.Errorf("UML hack dir %s: %w", dir, err)
		}
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find %s: %w", hackSubdir, err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		cand := filepath.Join(d, hackSubdir)
		if _, err := os.Stat(filepath.Join(cand, initScriptName)); err == nil {
			return cand, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no %s/%s above %s; set Options.HackDir", hackSubdir, initScriptName, wd)
		}
	}
}

// defaultCacheDir is ${XDG_CACHE_HOME:-$HOME/.cache}/lvms/uml.
func defaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate cache dir: %w", err)
	}
	return filepath.Join(base, "lvms", "uml"), nil
}

// ensureShim builds the xstate ptrace shim from hackDir into cacheDir unless a build of the
// same source exists (the source hash is in the file name), and returns the library's path.
// Concurrent callers are safe: each builds into its own temporary file and renames it.
func ensureShim(ctx context.Context, hackDir, cacheDir string) (string, error) {
	src := filepath.Join(hackDir, shimSourceName)
	code, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("read shim source: %w", err)
	}
	sum := sha256.Sum256(code)
	lib := filepath.Join(cacheDir, "xstate-shim-"+hex.EncodeToString(sum[:8])+".so")
	if _, err := os.Stat(lib); err == nil {
		return lib, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("stat shim: %w", err)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("create cache dir: %w", err)
	}
	tmp, err := os.CreateTemp(cacheDir, ".xstate-shim-*.so")
	if err != nil {
		return "", fmt.Errorf("create shim temp file: %w", err)
	}
	tmpName := tmp.Name()
	_ = tmp.Close()
	defer os.Remove(tmpName) // no-op after a successful rename

	out, err := exec.CommandContext(ctx, "gcc", "-O2", "-Wall", "-shared", "-fPIC", "-o", tmpName, src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build xstate shim with gcc (run hack/uml-deps.sh?): %w: %s", err, out)
	}
	if err := os.Rename(tmpName, lib); err != nil {
		return "", fmt.Errorf("install shim: %w", err)
	}
	return lib, nil
}
