package nodeagent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestCapacityPublished(t *testing.T) {
	classesErr := errors.New("cache not synced")
	tests := []struct {
		name        string
		annotations map[string]string
		classes     []string
		classesErr  error
		want        bool
		wantErr     bool
	}{
		{name: "every class annotated", classes: []string{"thick", "thin"},
			annotations: map[string]string{"capacity.topolvm.io/thick": "0", "capacity.topolvm.io/thin": "1024"},
			want:        true},
		{name: "one class still missing", classes: []string{"thick", "thin"},
			annotations: map[string]string{"capacity.topolvm.io/thick": "1024"}},
		{name: "only the default class's annotation", classes: []string{"thin"},
			annotations: map[string]string{"capacity.topolvm.io/00default": "1024"}},
		{name: "no class selects the node", annotations: map[string]string{"capacity.topolvm.io/thin": "1"}},
		{name: "classes unknown", classes: []string{"thin"}, classesErr: classesErr, wantErr: true,
			annotations: map[string]string{"capacity.topolvm.io/thin": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(testNode(tt.annotations)).Build()
			check := CapacityPublished(c, "node-a", func(context.Context) ([]string, error) {
				return tt.classes, tt.classesErr
			})
			got, err := check(t.Context())
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("CapacityPublished = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
	t.Run("no Node", func(t *testing.T) {
		check := CapacityPublished(fake.NewClientBuilder().Build(), "node-a",
			func(context.Context) ([]string, error) { return []string{"thin"}, nil })
		if ok, err := check(t.Context()); ok || err == nil {
			t.Errorf("CapacityPublished without a Node = %v, %v; want false and an error", ok, err)
		}
	})
}

// registered reports whether the registration socket exists (the kubelet's plugin watcher acts on
// its creation).
func registered(t *testing.T, sock string) bool {
	t.Helper()
	_, err := os.Lstat(sock)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// waitFor polls cond every 10 ms for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestRegistrationWaitsForCapacity: the socket appears only once Ready says so, or once Wait has
// passed; stopped while waiting, Start returns without creating it.
func TestRegistrationWaitsForCapacity(t *testing.T) {
	start := func(t *testing.T, ready func(context.Context) (bool, error), wait time.Duration,
	) (sock string, stop func() error) {
		sock = filepath.Join(shortTempDir(t), "topolvm.io-reg.sock")
		r := NewRegistration(RegistrationOptions{SocketPath: sock, Ready: ready, Wait: wait})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.Start(ctx) }()
		return sock, func() error { cancel(); return <-done }
	}

	t.Run("until ready", func(t *testing.T) {
		var published atomic.Bool
		var calls atomic.Int32
		sock, stop := start(t, func(context.Context) (bool, error) {
			calls.Add(1)
			return published.Load(), nil
		}, time.Hour)
		waitFor(t, "three checks", func() bool { return calls.Load() >= 3 })
		if registered(t, sock) {
			t.Fatal("registered before the capacity was published")
		}
		published.Store(true)
		waitFor(t, "the registration socket", func() bool { return registered(t, sock) })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("the wait's bound", func(t *testing.T) {
		sock, stop := start(t, func(context.Context) (bool, error) { return false, errors.New("no node") },
			300*time.Millisecond)
		waitFor(t, "the registration socket", func() bool { return registered(t, sock) })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("stopped while waiting", func(t *testing.T) {
		var calls atomic.Int32
		sock, stop := start(t, func(context.Context) (bool, error) { calls.Add(1); return false, nil }, time.Hour)
		waitFor(t, "a check", func() bool { return calls.Load() >= 1 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if registered(t, sock) {
			t.Error("registered after being stopped")
		}
	})
	t.Run("no wait", func(t *testing.T) {
		sock, stop := start(t, func(context.Context) (bool, error) { return false, nil }, 0)
		waitFor(t, "the registration socket", func() bool { return registered(t, sock) })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	})
}
