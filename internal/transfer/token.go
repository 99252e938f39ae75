package transfer

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Transfers are authorised by tokens the operator issues, one per transfer: signed with the
// operator's ed25519 key (whose private half only the operator reads), verified by the source node's
// agent with the public half. A token names the source LV, the target LV and the target node, and
// is good once, before it expires: the source agent serves a transfer only to the target node's
// agent (the node name of its client certificate, which the operator issued) and remembers each
// token it accepted until it expires (in memory: a source agent that restarts forgets them, so tokens
// are to live minutes). A node agent cannot forge a token (it holds no private key) or use another
// node's.

// Volume names an LV on a node: its device class there ("" for any of the node's classes) and its
// name (a volume ID).
type Volume struct {
	Node  string `json:"node"`
	Class string `json:"class,omitempty"`
	LV    string `json:"lv"`
}

// Claims is what a token grants: the target node's agent may read Source to write it into Target.
type Claims struct {
	Source  Volume    `json:"source"`
	Target  Volume    `json:"target"`
	Expires time.Time `json:"expires"`
	// ID makes every token single-use.
	ID string `json:"id"`
}

var (
	// ErrTokenInvalid means a token is malformed, not signed by the operator's key, or expired.
	ErrTokenInvalid = errors.New("invalid transfer token")
	// ErrTokenPeer means a token is presented by another node than its target node.
	ErrTokenPeer = errors.New("transfer token is for another node")
	// ErrTokenUsed means a token was accepted before.
	ErrTokenUsed = errors.New("transfer token used before")
)

// Issue returns a token granting c, with a new ID, signed with key.
func Issue(key ed25519.PrivateKey, c Claims) (string, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return "", fmt.Errorf("issue transfer token: %w", err)
	}
	c.ID = base64.RawURLEncoding.EncodeToString(id)
	body, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("issue transfer token: %w", err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(body) + "." + enc.EncodeToString(ed25519.Sign(key, body)), nil
}

// Verifier is the source node's side: it accepts each valid token once.
type Verifier struct {
	key  func() ed25519.PublicKey
	now  func() time.Time
	mu   sync.Mutex
	used map[string]time.Time // token ID → expiry
	// journal, when set (WithJournal), keeps used across restarts.
	journal *os.File
}

// NewVerifier returns a Verifier of tokens signed with key's private half; now is time.Now when
// nil.
func NewVerifier(key ed25519.PublicKey, now func() time.Time) *Verifier {
	return NewVerifierOf(func() ed25519.PublicKey { return key }, now)
}

// NewVerifierOf returns a Verifier of tokens signed with the private half of the key that key returns
// at each check (Identity.TokenKey: the operator's key as the trust ConfigMap has it).
func NewVerifierOf(key func() ed25519.PublicKey, now func() time.Time) *Verifier {
	if now == nil {
		now = time.Now
	}
	return &Verifier{key: key, now: now, used: map[string]time.Time{}}
}

// Accept returns the claims of token when it is signed with the verifier's key, unexpired, unused,
// and presented by its target node (peer: the node name of the client's certificate); it then
// counts as used.
func (v *Verifier) Accept(token, peer string) (Claims, error) {
	body, sig, ok := strings.Cut(token, ".")
	enc := base64.RawURLEncoding
	b, err1 := enc.DecodeString(body)
	s, err2 := enc.DecodeString(sig)
	key := v.key()
	if !ok || err1 != nil || err2 != nil || len(key) != ed25519.PublicKeySize || !ed25519.Verify(key, b, s) {
		return Claims{}, ErrTokenInvalid
	}
	var c Claims
	if err := json.Unmarshal(b, &c); err != nil || c.ID == "" {
		return Claims{}, ErrTokenInvalid
	}
	now := v.now()
	if !now.Before(c.Expires) {
		return Claims{}, fmt.Errorf("%w: expired at %s", ErrTokenInvalid, c.Expires.Format(time.RFC3339))
	}
	if peer != c.Target.Node {
		return Claims{}, fmt.Errorf("%w: %q presented a token of node %q", ErrTokenPeer, peer, c.Target.Node)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for id, exp := range v.used {
		if !now.Before(exp) {
			delete(v.used, id) // expired: refused by its expiry from now on
		}
	}
	if _, seen := v.used[c.ID]; seen {
		return Claims{}, ErrTokenUsed
	}
	if err := v.record(c.ID, c.Expires); err != nil {
		return Claims{}, err
	}
	v.used[c.ID] = c.Expires
	return c, nil
}
