//go:build e2e

package e2e

import (
	"os"
	"testing"
)

// fullSetOnly skips a test in the core set (E2E_SET=core, what make test runs) and runs it in the
// full set (E2E_SET=full: make e2e-full, make test-more, and go test without E2E_SET). On this
// project's 2-core machines the local cluster's nodes are UML guests whose every system call is a
// ptrace round trip through the host; there the whole suite outlasted 75 min (CI at fd66241), more
// than make test's share of CI's 90 min. The core set keeps one test of each product path (install,
// privileges, placement, each volume flow of the thin and thick classes, tenants' data, metrics,
// kubectl lvms, the LVMCluster's removal); the full set adds the tests listed in docs/e2e.md under
// "The core and the full set", with what each costs there. why says what the test proves beyond
// the core set, printed with the skip.
func fullSetOnly(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("E2E_SET") == "core" {
		t.Skipf("in the full set only (make e2e-full; E2E_SET=core leaves it out): %s", why)
	}
}
