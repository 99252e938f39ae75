// Package transfer moves a volume's data from one node to another: what restore, clone, move and
// evacuate across nodes build on (docs/mobility.md when it lands; issue 41).
//
// This first part is the copy engine. Copy moves the byte ranges a source lists (a thin snapshot's
// allocated ranges, from thinmeta, or the whole device of a thick one) in chunks from a Source (the
// source node's side) to a Sink (the target's): each chunk's SHA-256 travels with it and is
// checked before the chunk is written; at every checkpoint the sink is synced, what it wrote since
// is read back and checked again, and only then does the Progress move on. A copy resumes from the
// last Progress after either side restarts, re-copying at most one checkpoint's worth.
//
// Tokens (Issue, Verifier) authorise one transfer each: signed by the operator's ed25519 key, bound
// to the source LV, the target LV and the target node, single-use and short-lived.
package transfer
