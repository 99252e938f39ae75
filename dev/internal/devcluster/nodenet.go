package devcluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/bridge"
)

// guestRedirectPort is where guestbridge listens in every guest (-redirect) for the node's TCP
// to the other nodes' pod networks: hack/uml/real-node.sh has netfilter DNAT every TCP
// connection from the node or its pods to an address in podNet outside the node's own podCIDR to
// 127.0.0.1:guestRedirectPort. guestbridge reads each connection's original destination and
// asks the host for a stream to it; relayFrom carries that over the owning node's bridge.
const guestRedirectPort = 15001

// relayFrom is the bridge.Options.Relay of node from's bridge: the guests have no network
// between them, so a connection node from's guest opens to a pod address of another node is
// carried over that node's bridge to the pod address inside it, the way the egress proxy reaches
// pods. Only pod addresses of other nodes that are up are served; nothing is dialed on the host.
// Each connection is two bridge streams joined on the host: any port, both directions with their
// half-closes, each line's flow control pacing a transfer end to end.
func (p *egressProxy) relayFrom(from int) bridge.RelayFunc {
	return func(ctx context.Context, target netip.AddrPort) (net.Conn, error) {
		node, err := relayNode(from, target)
		if err != nil {
			return nil, err
		}
		s := p.session(node)
		if s == nil {
			return nil, fmt.Errorf("%s: no bridge to node %d", target, node)
		}
		c, err := s.Dial(ctx, target.String())
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", node, err)
		}
		return c, nil
	}
}

// relayNode is the node whose pods have target, which node from may reach through the host.
func relayNode(from int, target netip.AddrPort) (int, error) {
	ip := target.Addr().Unmap()
	if !ip.Is4() || !podNet.Contains(ip) {
		return 0, fmt.Errorf("%s is not a pod address", target)
	}
	node := podNode(ip)
	if node == from {
		return 0, fmt.Errorf("%s is in node %d's own pod network", target, from)
	}
	if node < 0 {
		return 0, fmt.Errorf("%s is in no node's pod network", target)
	}
	return node, nil
}
