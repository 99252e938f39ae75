package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// cacheFormat changes when what the key covers changes.
const cacheFormat = "lvms-image-inputs v1"

// cacheRecord is <name>.inputs: the key of the inputs an archive was written from, and what the
// build reported for it.
type cacheRecord struct {
	Key    string `json:"key"`
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// inputsKey is the SHA-256 of everything an image archive is made of: the Spec (every file of
// every layer, the config, the time), the SBOM, the image package's own source in repoDir (so a
// change to how images are written is a new key) and the go-containerregistry version. The same
// key gives the same archive, since the build is reproducible.
func inputsKey(repoDir string, spec Spec, sbom []byte) (string, error) {
	h := sha256.New()
	field := func(parts ...string) {
		for _, p := range parts {
			fmt.Fprintf(h, "%d:%s;", len(p), p)
		}
	}
	field(cacheFormat, registryModuleVersion())
	if err := hashSources(h, filepath.Join(repoDir, "dev", "internal", "image")); err != nil {
		return "", err
	}
	config, err := json.Marshal(struct {
		Ref, User, WorkingDir string
		Entrypoint, Cmd, Env  []string
		Labels                map[string]string
		Created               int64
	}{spec.Ref, spec.User, spec.WorkingDir, spec.Entrypoint, spec.Cmd, spec.Env, spec.Labels, spec.Created.Unix()})
	if err != nil {
		return "", fmt.Errorf("encode the config of %s: %w", spec.Ref, err)
	}
	field(string(config), string(sbom))
	for _, l := range spec.Layers {
		field("layer", l.CreatedBy)
		for _, e := range l.Tree.Entries() {
			sum := sha256.Sum256(e.Data)
			field(e.Path, string(e.Type), fmt.Sprint(e.Mode, e.UID, e.GID), e.Link, hex.EncodeToString(sum[:]))
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashSources adds the name and content of every non-test Go file of dir to h.
func hashSources(h hash.Hash, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read the image package's source: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return fmt.Errorf("read the image package's source: %w", err)
		}
		fmt.Fprintf(h, "file:%s;", n)
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("read %s: %w", n, err)
		}
	}
	return nil
}

// registryModuleVersion is the version of go-containerregistry this program was built with.
func registryModuleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range info.Deps {
		if d.Path == "github.com/google/go-containerregistry" {
			return d.Version
		}
	}
	return "unknown"
}

// cached returns the Result of the archive <name>.tar in dir when its <name>.inputs record has key
// and the archive and digest file are there; ok is false otherwise (build it).
func cached(dir, name, key string) (Result, bool) {
	res := Result{Archive: filepath.Join(dir, name+".tar"), DigestFile: filepath.Join(dir, name+".digest")}
	raw, err := os.ReadFile(filepath.Join(dir, name+".inputs"))
	if err != nil {
		return res, false
	}
	var rec cacheRecord
	if json.Unmarshal(raw, &rec) != nil || rec.Key != key {
		return res, false
	}
	digest, err := os.ReadFile(res.DigestFile)
	if err != nil || strings.TrimSpace(string(digest)) != rec.Digest {
		return res, false
	}
	if _, err := os.Stat(res.Archive); err != nil {
		return res, false
	}
	h, err := v1.NewHash(rec.Digest)
	if err != nil {
		return res, false
	}
	res.Ref, res.Digest, res.Size = rec.Ref, h, rec.Size
	return res, true
}

// record writes <name>.inputs for an archive just written from key.
func record(dir, name, key string, res Result) error {
	raw, err := json.Marshal(cacheRecord{Key: key, Ref: res.Ref, Digest: res.Digest.String(), Size: res.Size})
	if err != nil {
		return fmt.Errorf("encode the inputs record of %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".inputs"), append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the inputs record of %s: %w", name, err)
	}
	return nil
}

// forget removes the inputs record of name, before its archive is rewritten.
func forget(dir, name string) error {
	err := os.Remove(filepath.Join(dir, name+".inputs"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the inputs record of %s: %w", name, err)
	}
	return nil
}
