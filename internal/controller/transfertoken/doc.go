// Package transfertoken is the operator's side of copies between nodes (issue 41): for every
// attempt a node agent records in a LogicalVolume's status.transfer, it issues a transfer token
// (single-use, short-lived, bound to the source LV, the target LV and the target node; signed with
// the transfer authority's key, which only the operator holds) and names the address of the source
// node's agent. The agents do the copy between themselves; no data passes through the operator.
package transfertoken
