package devcluster

import (
	"fmt"
	"testing"
)

func TestLinkRoutes(t *testing.T) {
	c := &cluster{cfg: Config{Nodes: 3}}
	for i, want := range []string{
		"10.244.2.0/24=10.101.0.2 10.100.0.2/32=10.101.0.2 10.244.3.0/24=10.101.0.3 10.100.0.3/32=10.101.0.3",
		"10.244.1.0/24=10.101.0.1 10.100.0.1/32=10.101.0.1 10.244.3.0/24=10.101.0.3 10.100.0.3/32=10.101.0.3",
		"10.244.1.0/24=10.101.0.1 10.100.0.1/32=10.101.0.1 10.244.2.0/24=10.101.0.2 10.100.0.2/32=10.101.0.2",
	} {
		if got := c.linkRoutes(i); got != want {
			t.Errorf("node %d routes %q, want %q", i, got, want)
		}
		if got, want := linkPrefix(i).String(), fmt.Sprintf("10.101.0.%d/24", i+1); got != want {
			t.Errorf("node %d link address %s, want %s", i, got, want)
		}
	}
	if a, b := linkMAC(0).String(), linkMAC(1).String(); a == b || linkMAC(0)[0]&3 != 2 {
		t.Errorf("link MACs %s and %s: want distinct, locally administered unicast addresses", a, b)
	}
}
