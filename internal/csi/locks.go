package csi

import "sync"

// VolumeLocks serialises operations per volume: one operation per ID at a time, and a second one is
// refused rather than queued (the RPC answers codes.Aborted and the caller retries). Operations on
// different volumes never wait for each other. The zero value is ready to use.
type VolumeLocks struct {
	mu   sync.Mutex
	held map[string]struct{}
}

// TryAcquire takes the lock of id and reports whether it was free.
func (l *VolumeLocks) TryAcquire(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, busy := l.held[id]; busy {
		return false
	}
	if l.held == nil {
		l.held = map[string]struct{}{}
	}
	l.held[id] = struct{}{}
	return true
}

// Release frees the lock of id.
func (l *VolumeLocks) Release(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.held, id)
}
