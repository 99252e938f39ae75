// Package transfersigner is the operator's side of the node-to-node transfer PKI (issue 41; the
// node's side is transfer.Identity). It keeps the transfer authority (transfer.Authority: the CA of
// the node agents' channel certificates and the key transfer tokens are signed with) in the Secret
// transfer.AuthoritySecret of the operator namespace, creating it when missing (Ensure); publishes
// its public half (transfer.Trust) in the ConfigMap transfer.TrustConfigMap there, which the node
// agents read, and keeps that ConfigMap as the authority says; and signs the node agents'
// CertificateSigningRequests of signer transfer.SignerName.
//
// A node agent makes its key in memory and asks for its certificate with a CertificateSigningRequest
// whose Subject CommonName and only DNS name are its node. The signer approves and signs a request
// only when what the API server recorded of the requester proves it comes from the node agent on
// that very node: spec.username is the node agent's service account, and spec.extra holds exactly
// one node under transfer.NodeNameExtra, which the API server sets from a Pod-bound service account
// token (the node of the requesting Pod) and which no request body can set. The request must also
// ask for exactly the usages digital signature, client auth and server auth, with an ECDSA P-256 or
// ed25519 key, signed by that key (transfer.CheckNodeCSR). A request that breaks a rule is denied
// with a reason saying which (the Reason constants), never signed; one approved by someone else
// that breaks a rule is marked Failed. The certificate lives as long as spec.expirationSeconds asks,
// at most transfer.DefaultCertLifetime. Requests of other signers are not even cached (the signer's
// cache selects on spec.signerName), and requests already issued, denied or failed are left alone.
//
// The authority is read once, when the operator starts: replacing the Secret (delete it and restart
// the operator, which makes a new one) voids every node's certificate until its node agent has a new
// one. The Secret is immutable, so that an edit cannot change the authority under a
// running operator.
package transfersigner
