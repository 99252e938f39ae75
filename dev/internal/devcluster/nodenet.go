package devcluster

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/lvm-operator/lvm-operator/dev/internal/devcluster/umlswitch"
)

// linkNet is the Ethernet network between the nodes: node i's eth0 has linkAddr(i), attached
// to the supervisor's switch (umlswitch, UML's daemon transport over unix datagrams), and every
// node routes each other node's pod network to that node's link address. Nothing on the host has
// an address in it: the frames are datagrams between the guests' kernels and the supervisor.
// That carries the node agents' transfers at the speed of the guests' network stacks, instead of
// the serial line each node shares with its API traffic.
var linkNet = netip.MustParsePrefix("10.101.0.0/24")

func linkAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 101, 0, byte(i + 1)}) }

// linkPrefix is node i's address on linkNet with the network's length (the form "ip addr" takes).
func linkPrefix(i int) netip.Prefix { return netip.PrefixFrom(linkAddr(i), linkNet.Bits()) }

// linkMAC is node i's eth0 address: locally administered, unicast, unique per node.
func linkMAC(i int) net.HardwareAddr {
	return net.HardwareAddr{0x02, 0x4c, 0x56, 0x4d, 0x00, byte(i + 1)}
}

// linkRoutes is node i's routes to the other nodes' pod networks and node IPs for
// hack/uml/real-node.sh: space-separated "CIDR=GATEWAY" pairs.
func (c *cluster) linkRoutes(i int) string {
	var routes []string
	for j := range c.cfg.Nodes {
		if j != i {
			gw := linkAddr(j).String()
			routes = append(routes, podCIDR(j).String()+"="+gw, netip.PrefixFrom(nodeIP(j), 32).String()+"="+gw)
		}
	}
	return strings.Join(routes, " ")
}

// startNodeNet starts the switch between the nodes, logging to logs/nodenet.log.
func startNodeNet(l Layout) (*umlswitch.Switch, error) {
	logFile, err := os.OpenFile(l.Log("nodenet"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open node network log: %w", err)
	}
	// The switch's logger keeps writing to the file until the supervisor exits.
	s, err := umlswitch.Listen(l.NodeNetSocket(), fileLogger(logFile))
	if err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("node network: %w", err)
	}
	return s, nil
}
