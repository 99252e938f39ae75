package image

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPush pushes an archive to go-containerregistry's in-memory registry and reads the image
// back by tag: the registry holds the manifest digest the build printed.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: anonymous push

	img, err := testSpec().Image()
	if err != nil {
		t.Fatal(err)
	}
	res, err := WriteArchive(img, "lvms.local/pause:dev", t.TempDir(), "pause", epoch)
	if err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimPrefix(srv.URL, "http://") + "/lvm-operator/pause:test"
	pushed, err := Push(context.Background(), res.Archive, ref)
	if err != nil {
		t.Fatal(err)
	}
	if pushed != res.Digest {
		t.Fatalf("pushed %s, built %s", pushed, res.Digest)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(r)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != res.Digest {
		t.Fatalf("registry has %s, built %s", desc.Digest, res.Digest)
	}
}
