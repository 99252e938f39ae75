package claimevents

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// defaultMaxRemembered bounds the claims whose last event the controller keeps.
const defaultMaxRemembered = 10000

// seriesWindow is how long after an event of a claim a different note waits. client-go's events
// recorder treats events with the same type, reason, action, regarding and related objects as one
// series whatever their note, until 6 minutes after the last one, which it checks every 6 minutes: a
// changed note recorded sooner would only count as a repeat of the earlier event and keep its old
// note. 13 minutes is past that in every case.
const seriesWindow = 13 * time.Minute

// sentNote is the last event recorded for a claim.
type sentNote struct {
	// note is empty once the claim fitted: the next shortage is news whatever its note.
	note string
	at   time.Time
}

// lastNotes remembers the last event recorded for each claim, for at most max claims.
type lastNotes struct {
	mu      sync.Mutex
	max     int
	byClaim map[types.UID]sentNote
}

func newLastNotes(maxClaims int) *lastNotes {
	return &lastNotes{max: maxClaims, byClaim: map[types.UID]sentNote{}}
}

// record tells whether note is to be recorded for claim now, and if so remembers it as sent: when
// no event was recorded for the claim, or its note differs from the last one and the recorder's
// series of that one has ended. At the bound, a new claim pushes out an arbitrary other one, whose
// next note is then recorded again: one repeated event, never an unbounded map.
func (m *lastNotes) record(claim types.UID, note string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	last, known := m.byClaim[claim]
	if known && (last.note == note || now.Sub(last.at) < seriesWindow) {
		return false
	}
	if !known && len(m.byClaim) >= m.max {
		for other := range m.byClaim {
			delete(m.byClaim, other)
			break
		}
	}
	m.byClaim[claim] = sentNote{note: note, at: now}
	return true
}

// fitted notes that claim no longer lacks capacity: the next shortage is news, once the series of
// the last event has ended.
func (m *lastNotes) fitted(claim types.UID, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last, known := m.byClaim[claim]
	switch {
	case !known:
	case now.Sub(last.at) >= seriesWindow:
		delete(m.byClaim, claim)
	default:
		m.byClaim[claim] = sentNote{at: last.at}
	}
}

// forget drops what is remembered of claim, which no longer waits for a volume.
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
