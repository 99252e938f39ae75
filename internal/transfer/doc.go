// Package transfer moves a volume's data from one node to another: what restore, clone, move and
// evacuate across nodes build on (docs/mobility.md when it lands; issue 41).
//
// The copy engine has two halves, one per node. Send (the source node's side) reads the byte ranges
// a source lists (a thin snapshot's allocated ranges, from thinmeta, or the whole device of a thick
// one) in chunks, each with its SHA-256; a Receiver (the target's) checks each chunk before it
// writes it into the Sink, and at every checkpoint syncs the sink, reads back and checks what it
// wrote since, and only then moves the Progress on. A copy resumes from the last Progress after
// either side restarts (Send from its Offset), re-copying at most one checkpoint's worth. Copy is
// both halves in one process.
//
// Tokens (Issue, Verifier) authorise one transfer each: signed by the operator's ed25519 key, bound
// to the source LV, the target LV and the target node, single-use and short-lived.
//
// The channel (proto/transfer.proto): the source node's agent serves Read (Server) over mutual TLS
// to the target node's agent (Fetch), which is known by its certificate's node name. Each agent's
// Identity makes its key in memory and asks for its certificate with a CertificateSigningRequest of
// signer SignerName, which the operator's Authority signs only for the node the requesting pod runs
// on (internal/controller/transfersigner); the operator issues the tokens per attempt of a copy
// (internal/controller/transfertoken), and the LogicalVolume reconciler of the target node fetches
// (internal/controller/logicalvolume).
package transfer
