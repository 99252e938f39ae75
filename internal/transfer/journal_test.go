package transfer_test

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

// TestJournal: a token accepted by one verifier is refused by the next one reading the same journal
// (an agent restarted on the same node), until it expires; expired and torn lines are dropped.
func TestJournal(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	path := filepath.Join(t.TempDir(), "transfer-tokens-used")
	claims := transfer.Claims{Source: transfer.Volume{Node: "node-a", Class: "thin", LV: "snap"},
		Target: transfer.Volume{Node: "node-b", Class: "thin", LV: "pvc-1"}, Expires: now.Add(5 * time.Minute)}
	tok, err := transfer.Issue(priv, claims)
	if err != nil {
		t.Fatal(err)
	}
	first := transfer.NewVerifier(pub, clock)
	if err := first.WithJournal(path); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Accept(tok, "node-b"); err != nil {
		t.Fatalf("first use: %v", err)
	}
	// A torn line, and a token long expired.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("old 1000\ntorn")
	_ = f.Close()

	restarted := transfer.NewVerifier(pub, clock)
	if err := restarted.WithJournal(path); err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.Accept(tok, "node-b"); !errors.Is(err, transfer.ErrTokenUsed) {
		t.Fatalf("a replay after a restart: %v, want %v", err, transfer.ErrTokenUsed)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(
		strings.TrimSpace(string(b)),
		"\n",
	); len(lines) != 1 ||
		strings.HasPrefix(lines[0], "old") {
		t.Errorf("journal after the restart %q: want only the unexpired token", b)
	}
	now = now.Add(10 * time.Minute)
	later := transfer.NewVerifier(pub, clock)
	if err := later.WithJournal(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Errorf("journal keeps expired tokens: %q", b)
	}
	if _, err := later.Accept(tok, "node-b"); !errors.Is(err, transfer.ErrTokenInvalid) {
		t.Errorf("the expired token: %v, want %v", err, transfer.ErrTokenInvalid)
	}
}
