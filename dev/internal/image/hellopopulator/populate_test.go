package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestPopulate checks populate mode: the Hello's file with its contents and a final newline, under
// the mount path or at an absolute path (how upstream's controller names it), and nothing written
// outside the mount path.
func TestPopulate(t *testing.T) {
	tests := []struct {
		name, file, contents string
		// path is where the file is expected, relative to the mount path; "" when populate fails.
		path, want string
	}{
		{name: "a file under the mount path", file: "example-test.txt", contents: "Hello from namespace test",
			path: "example-test.txt", want: "Hello from namespace test\n"},
		{name: "contents ending in a newline", file: "a.txt", contents: "hi\n", path: "a.txt", want: "hi\n"},
		{name: "an absolute path", file: "/abs.txt", contents: "x", path: "abs.txt", want: "x\n"},
		{name: "a path leaving the mount path", file: "../escape.txt", contents: "x"},
		{name: "no file name", contents: "x"},
		{name: "no contents", file: "a.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mount := filepath.Join(t.TempDir(), "mnt")
			if err := os.Mkdir(mount, 0o755); err != nil {
				t.Fatal(err)
			}
			file := tt.file
			if filepath.IsAbs(file) {
				file = filepath.Join(mount, file)
			}
			err := run(context.Background(), options{mode: "populate", mountPath: mount, fileName: file,
				fileContents: tt.contents})
			if tt.path == "" {
				if err == nil {
					t.Fatal("populate succeeded, want an error")
				}
				if _, err := os.Stat(filepath.Join(mount, "..", "escape.txt")); err == nil {
					t.Error("populate wrote outside the mount path")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(mount, tt.path))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("file holds %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRunRefusesUnknownMode(t *testing.T) {
	if err := run(context.Background(), options{mode: "other"}); err == nil {
		t.Error("run with --mode=other succeeded")
	}
}
