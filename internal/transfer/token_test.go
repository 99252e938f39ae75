package transfer_test

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lvm-operator/lvm-operator/internal/transfer"
)

func TestTokens(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, otherPriv, _ := ed25519.GenerateKey(nil)
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	claims := transfer.Claims{
		Source:  transfer.Volume{Node: "node-a", Class: "thin", LV: "snap"},
		Target:  transfer.Volume{Node: "node-b", Class: "thin", LV: "pvc-1"},
		Expires: now.Add(5 * time.Minute),
	}
	issue := func(key ed25519.PrivateKey, c transfer.Claims) string {
		t.Helper()
		tok, err := transfer.Issue(key, c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	v := transfer.NewVerifier(pub, func() time.Time { return now })

	tok := issue(priv, claims)
	got, err := v.Accept(tok, "node-b")
	if err != nil || got.Source != claims.Source || got.Target != claims.Target || got.ID == "" {
		t.Fatalf("a valid token: %+v, %v", got, err)
	}
	if _, err := v.Accept(tok, "node-b"); !errors.Is(err, transfer.ErrTokenUsed) {
		t.Errorf("the same token again: %v, want ErrTokenUsed (no replay)", err)
	}
	if a, b := issue(priv, claims), issue(priv, claims); a == b {
		t.Error("two tokens of the same claims are equal: a token could stand for another")
	}

	body, sig, _ := strings.Cut(issue(priv, claims), ".")
	forgedBody, _, _ := strings.Cut(issue(priv, transfer.Claims{Source: transfer.Volume{Node: "node-a", LV: "other"},
		Target: claims.Target, Expires: claims.Expires}), ".")
	expired := claims
	expired.Expires = now
	for name, tc := range map[string]struct {
		token, peer string
		want        error
	}{
		"another node presents it":   {issue(priv, claims), "node-c", transfer.ErrTokenPeer},
		"signed by another key":      {issue(otherPriv, claims), "node-b", transfer.ErrTokenInvalid},
		"claims swapped under a sig": {forgedBody + "." + sig, "node-b", transfer.ErrTokenInvalid},
		"signature cut off":          {body, "node-b", transfer.ErrTokenInvalid},
		"expired":                    {issue(priv, expired), "node-b", transfer.ErrTokenInvalid},
		"garbage":                    {"x.y", "node-b", transfer.ErrTokenInvalid},
	} {
		if _, err := v.Accept(tc.token, tc.peer); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	// A token refused for the wrong peer was not used up: its node can still present it.
	tok = issue(priv, claims)
	if _, err := v.Accept(tok, "node-c"); !errors.Is(err, transfer.ErrTokenPeer) {
		t.Fatal(err)
	}
	if _, err := v.Accept(tok, "node-b"); err != nil {
		t.Errorf("its node after another node's attempt: %v", err)
	}
}
