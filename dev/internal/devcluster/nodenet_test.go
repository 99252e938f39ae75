package devcluster

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// fakeBridge stands in for a node's bridge: it records the addresses dialed inside the node and
// returns one end of a pipe (the other end is kept in far), or err.
type fakeBridge struct {
	node int
	err  error

	mu     sync.Mutex
	dialed []string
	far    []net.Conn
}

func (f *fakeBridge) Dial(_ context.Context, target string) (net.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dialed = append(f.dialed, target)
	if f.err != nil {
		return nil, f.err
	}
	near, far := net.Pipe()
	f.far = append(f.far, far)
	return near, nil
}

func TestNodeRelay(t *testing.T) {
	refused := errors.New("connection refused")
	nodes := map[int]nodeBridge{
		0: &fakeBridge{node: 0}, 1: &fakeBridge{node: 1}, 2: &fakeBridge{node: 2, err: refused},
	}
	p := &egressProxy{sessions: nodes}
	for _, tc := range []struct {
		name   string
		from   int
		target string
		node   int
		err    string
	}{
		{name: "pod of node 1 from node 0", from: 0, target: "10.244.2.7:9443", node: 1},
		{name: "pod of node 0 from node 1, any port", from: 1, target: "10.244.1.200:1", node: 0},
		{name: "own pod network", from: 0, target: "10.244.1.5:80", err: "node 0's own pod network"},
		{name: "node address", from: 0, target: "10.100.0.2:10250", err: "not a pod address"},
		{name: "outside the cluster", from: 0, target: "192.0.2.1:443", err: "not a pod address"},
		{name: "IPv6", from: 0, target: "[fd00::1]:443", err: "not a pod address"},
		{name: "unassigned pod network", from: 1, target: "10.244.0.3:80", err: "in no node's pod network"},
		{name: "node not up", from: 0, target: "10.244.9.3:80", err: "no bridge to node 8"},
		{name: "refused inside the node", from: 0, target: "10.244.3.3:80", err: "node 2: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := netip.MustParseAddrPort(tc.target)
			c, err := p.relayFrom(tc.from)(context.Background(), target)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("relay from node %d to %s: error %v, want %q", tc.from, target, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			f := nodes[tc.node].(*fakeBridge)
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.dialed) != 1 || f.dialed[0] != tc.target {
				t.Fatalf("node %d dialed %q, want [%s]", tc.node, f.dialed, tc.target)
			}
			f.dialed = nil
			// The relayed connection is the stream into the owning node.
			go func() { _, _ = f.far[len(f.far)-1].Write([]byte("pod")) }()
			b := make([]byte, 3)
			if _, err := c.Read(b); err != nil || string(b) != "pod" {
				t.Errorf("read %q, %v from the relayed connection", b, err)
			}
		})
	}
	for i, n := range nodes {
		if f := n.(*fakeBridge); i != 2 && len(f.dialed) > 0 {
			t.Errorf("node %d dialed %q for refused targets", i, f.dialed)
		}
	}
}
