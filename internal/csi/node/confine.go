package node

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// DefaultKubeletDir is the kubelet's root directory unless its --root-dir says otherwise.
const DefaultKubeletDir = "/var/lib/kubelet"

// errOutsideKubeletDir: a target or volume path is not below the kubelet's directory.
var errOutsideKubeletDir = errors.New("path is outside the kubelet's directory")

// confine checks that p lies strictly below root, both as written and after resolving the symbolic
// links of its longest existing prefix, so a request cannot make the node mount over, unmount or grow
// anything else on the host.
func confine(root, p string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return fmt.Errorf("%w: %q is not a clean absolute path", errOutsideKubeletDir, p)
	}
	if !below(root, p) {
		return fmt.Errorf("%w: %s is not below %s", errOutsideKubeletDir, p, root)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("resolve the kubelet directory %s: %w", root, err)
	}
	existing, err := resolveExisting(p)
	if err != nil {
		return err
	}
	if !below(realRoot, existing) {
		return fmt.Errorf("%w: %s resolves to %s, not below %s", errOutsideKubeletDir, p, existing, realRoot)
	}
	return nil
}

// below reports whether p is strictly inside dir (both clean and absolute).
func below(dir, p string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// resolveExisting resolves the symbolic links of the longest prefix of p that exists; what follows it
// does not exist yet and cannot be a link.
func resolveExisting(p string) (string, error) {
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || cur == "/" {
			return "", fmt.Errorf("resolve %s: %w", p, err)
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// kubeletDirOrDefault returns dir, or DefaultKubeletDir when dir is empty.
func kubeletDirOrDefault(dir string) string {
	if dir == "" {
		return DefaultKubeletDir
	}
	return filepath.Clean(dir)
}
