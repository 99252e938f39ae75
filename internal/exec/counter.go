package exec

import (
	"maps"
	"sync"
)

// Counter counts executions per command name. It is safe for concurrent use.
// A nil *Counter ignores Add and reports zero counts.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter {
	return &Counter{counts: map[string]int{}}
}

// Add records one execution of name.
func (c *Counter) Add(name string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[name]++
}

// Count returns how many times name was executed since the last Reset.
func (c *Counter) Count(name string) int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[name]
}

// Snapshot returns a copy of all counts.
func (c *Counter) Snapshot() map[string]int {
	if c == nil {
		return map[string]int{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Reset sets all counts to zero and returns the counts before the reset.
func (c *Counter) Reset() map[string]int {
	if c == nil {
		return map[string]int{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.counts
	c.counts = map[string]int{}
	return old
}
