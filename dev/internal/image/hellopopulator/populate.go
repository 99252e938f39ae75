package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// populate writes contents, ending in a newline as upstream's does, to name: a path under mount,
// or an absolute path (upstream's controller passes /mnt/NAME; a block volume's device).
func populate(mount, name, contents string) error {
	if name == "" || contents == "" {
		return errors.New("populate needs --file-name and --file-contents")
	}
	file := name
	if !filepath.IsAbs(name) {
		if !filepath.IsLocal(name) {
			return fmt.Errorf("--file-name %q is not a path under %s", name, mount)
		}
		file = filepath.Join(mount, name)
	}
	if !strings.HasSuffix(contents, "\n") {
		contents += "\n"
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", file, err)
	}
	_, err = f.WriteString(contents)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}
