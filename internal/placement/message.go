package placement

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxMessageBytes bounds CapacityMessage: the API server refuses an events.k8s.io/v1 Event whose note
// is longer.
const MaxMessageBytes = 1024

// maxReasonBytes bounds the volume group reason quoted for one node, so that one long reason leaves
// room for the other nodes.
const maxReasonBytes = 200

// NoNodeFits tells that the claim waits for a volume of a known device class and no node's capacity
// for that device class is known to hold the request.
func (r *Report) NoNodeFits() bool {
	if r.Bound != nil || r.StorageClassProblem != "" || r.DeviceClass == "" {
		return false
	}
	return !slices.ContainsFunc(r.Nodes, func(n NodeFit) bool { return n.Fit == FitFits })
}

// CapacityMessage is the one-line explanation of a report in which no node fits, for an Event on the
// claim: the request and device class, then each node with its free bytes or why its device class
// cannot take the volume, the nodes closest to fitting first. It is at most MaxMessageBytes long;
// the nodes beyond that are counted ("and 3 more nodes").
func CapacityMessage(r *Report) string {
	return capacityMessage(r, MaxMessageBytes)
}

// capacityMessage is CapacityMessage with at most limit bytes.
func capacityMessage(r *Report, limit int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "no node can hold %s of device class %s: ", FormatBytesExact(r.RequestedBytes), r.DeviceClass)
	if len(r.Nodes) == 0 {
		b.WriteString("the cluster has no nodes")
		return truncate(b.String(), limit)
	}
	nodes := slices.Clone(r.Nodes)
	slices.SortFunc(nodes, closestFirst)
	for i, n := range nodes {
		sep := "; "
		if i == 0 {
			sep = ""
		}
		part := n.Node + ": " + n.shortDescription(r.DeviceClass)
		// Room must remain for the count of the nodes after this one, should the next not fit.
		if i > 0 && b.Len()+len(sep)+len(part)+len(moreNodes(len(nodes)-i-1)) > limit {
			b.WriteString(moreNodes(len(nodes) - i))
			break
		}
		b.WriteString(sep + part)
	}
	return truncate(b.String(), limit)
}

// shortDescription is what the event says of one node's device class.
func (f NodeFit) shortDescription(deviceClass string) string {
	switch f.Fit {
	case FitFits, FitTooSmall:
		return FormatBytesExact(*f.FreeBytes) + " free"
	case FitNotReady:
		if f.Reason == "" {
			return fmt.Sprintf("device class %s is %s", deviceClass, f.State)
		}
		return fmt.Sprintf("device class %s is %s: %s", deviceClass, f.State, truncate(f.Reason, maxReasonBytes))
	case FitNotOnNode:
		return fmt.Sprintf("device class %s is not on this node", deviceClass)
	default:
		return fmt.Sprintf("device class %s has no known free capacity: %s", deviceClass,
			truncate(f.Reason, maxReasonBytes))
	}
}

// moreNodes counts the nodes a message leaves out, with its separator; "" for none.
func moreNodes(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "; and 1 more node"
	default:
		return fmt.Sprintf("; and %d more nodes", n)
	}
}

// fitRank orders the kinds of NodeFit from the closest to holding a volume to the farthest.
var fitRank = map[Fit]int{FitFits: 0, FitTooSmall: 0, FitUnknown: 1, FitNotReady: 2, FitNotOnNode: 3}

// closestFirst sorts nodes with free bytes by the most free, then nodes of unknown capacity, then
// those whose volume group is not Ready, then those without the device class; by name within each.
func closestFirst(a, b NodeFit) int {
	if c := cmp.Compare(fitRank[a.Fit], fitRank[b.Fit]); c != 0 {
		return c
	}
	if a.FreeBytes != nil && b.FreeBytes != nil {
		if c := cmp.Compare(*b.FreeBytes, *a.FreeBytes); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.Node, b.Node)
}

// truncate cuts s to at most limit bytes on a rune boundary, ending it with "..." when it cuts.
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const ellipsis = "..."
	cut := max(limit-len(ellipsis), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
