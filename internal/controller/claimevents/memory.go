package claimevents

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// defaultMaxRemembered bounds the claims whose last note the controller keeps.
const defaultMaxRemembered = 10000

// lastNotes remembers the last note recorded for each claim, for at most max claims.
type lastNotes struct {
	mu      sync.Mutex
	max     int
	byClaim map[types.UID]string
}

func newLastNotes(maxClaims int) *lastNotes {
	return &lastNotes{max: maxClaims, byClaim: map[types.UID]string{}}
}

// changed stores note as the last one of claim and tells whether it differs from the one before (or
// there was none). At the bound, a new claim pushes out an arbitrary other one, whose next note is
// then recorded again: one repeated event, never an unbounded map.
func (m *lastNotes) changed(claim types.UID, note string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	last, known := m.byClaim[claim]
	if known && last == note {
		return false
	}
	if !known && len(m.byClaim) >= m.max {
		for other := range m.byClaim {
			delete(m.byClaim, other)
			break
		}
	}
	m.byClaim[claim] = note
	return true
}

// forget drops what is remembered of claim: it no longer lacks capacity (or is gone), and a shortage
// that comes back is news.
func (m *lastNotes) forget(claim types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byClaim, claim)
}

// len is how many claims are remembered.
func (m *lastNotes) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byClaim)
}
