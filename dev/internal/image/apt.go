package image

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Deb is one Debian package of an image, as apt's index describes it.
type Deb struct {
	Name     string
	Version  string
	Arch     string
	SHA256   string
	Filename string // path in the archive, pool/main/...
	// File is the downloaded .deb in the cache.
	File string
}

// Apt downloads Debian packages with the host's apt into a cache directory.
type Apt struct {
	// CacheDir holds the downloaded .deb files, named as in the archive's pool.
	CacheDir string
	// Exclude maps packages never installed into an image to the reason why.
	Exclude map[string]string
}

// depFlags restrict apt-cache depends to what a package needs at run time.
var depFlags = []string{
	"depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
	"--no-breaks", "--no-replaces", "--no-enhances",
}

// Resolve computes the dependency closure of roots and returns the packages, sorted by name,
// downloaded and checked against the SHA256 of apt's index.
func (a *Apt) Resolve(ctx context.Context, roots []string) ([]Deb, error) {
	out, err := a.output(ctx, "", "apt-cache", append(slices.Clone(depFlags), roots...)...)
	if err != nil {
		return nil, err
	}
	g, err := parseDepends(out)
	if err != nil {
		return nil, err
	}
	names, err := g.closure(roots, a.Exclude)
	if err != nil {
		return nil, err
	}
	show, err := a.output(ctx, "", "apt-cache", append([]string{"show", "--no-all-versions"}, names...)...)
	if err != nil {
		return nil, err
	}
	debs, err := parseShow(show)
	if err != nil {
		return nil, err
	}
	if len(debs) != len(names) {
		return nil, fmt.Errorf("apt-cache show described %d packages, wanted %d (%v)", len(debs), len(names), names)
	}
	for i := range debs {
		if err := a.download(ctx, &debs[i]); err != nil {
			return nil, err
		}
	}
	return debs, nil
}

// parseShow parses `apt-cache show --no-all-versions` stanzas into Debs sorted by name.
func parseShow(out string) ([]Deb, error) {
	var debs []Deb
	var cur Deb
	flush := func() error {
		if cur.Name == "" {
			return nil
		}
		if cur.Version == "" || cur.SHA256 == "" || cur.Filename == "" {
			return fmt.Errorf("apt-cache show: package %s lacks Version, SHA256 or Filename", cur.Name)
		}
		debs = append(debs, cur)
		cur = Deb{}
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		key, val, ok := strings.Cut(line, ": ")
		if !ok || strings.HasPrefix(line, " ") {
			continue
		}
		switch key {
		case "Package":
			cur.Name = val
		case "Version":
			cur.Version = val
		case "Architecture":
			cur.Arch = val
		case "SHA256":
			cur.SHA256 = val
		case "Filename":
			cur.Filename = val
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read apt-cache show output: %w", err)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	slices.SortFunc(debs, func(a, b Deb) int { return strings.Compare(a.Name, b.Name) })
	return debs, nil
}

// download puts d into the cache unless a file with the right SHA256 is there already.
func (a *Apt) download(ctx context.Context, d *Deb) error {
	d.File = filepath.Join(a.CacheDir, path.Base(d.Filename))
	if sum, err := fileSHA256(d.File); err == nil && sum == d.SHA256 {
		return nil
	}
	if err := os.MkdirAll(a.CacheDir, 0o755); err != nil {
		return fmt.Errorf("create deb cache: %w", err)
	}
	tmp, err := os.MkdirTemp(a.CacheDir, ".download-")
	if err != nil {
		return fmt.Errorf("create download directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	if _, err := a.output(ctx, tmp, "apt-get", "download", d.Name+"="+d.Version); err != nil {
		return err
	}
	got, err := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if err != nil || len(got) != 1 {
		return fmt.Errorf("apt-get download %s=%s left %d .deb files", d.Name, d.Version, len(got))
	}
	sum, err := fileSHA256(got[0])
	if err != nil {
		return err
	}
	if sum != d.SHA256 {
		return fmt.Errorf("downloaded %s has sha256 %s, apt's index says %s", d.Name, sum, d.SHA256)
	}
	if err := os.Rename(got[0], d.File); err != nil {
		return fmt.Errorf("move %s into the cache: %w", d.Name, err)
	}
	return nil
}

func fileSHA256(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", file, err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// output runs a command with LC_ALL=C in dir and returns its stdout.
func (a *Apt) output(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
