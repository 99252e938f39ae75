package csi

import (
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// VolumeLocks serialises operations per volume: one operation per ID at a time, and a second one is
// refused rather than queued (the RPC answers codes.Aborted and the caller retries). Operations on
// different volumes never wait for each other. The zero value is ready to use.
type VolumeLocks struct {
	mu   sync.Mutex
	held map[string]struct{}
}

// Lock takes the lock of id and returns its release. While another operation holds it, the error
// is the RPC's answer: codes.Aborted, which tells the caller to retry.
func (l *VolumeLocks) Lock(id string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, busy := l.held[id]; busy {
		return nil, status.Errorf(codes.Aborted, "an operation on %s is already in progress", id)
	}
	if l.held == nil {
		l.held = map[string]struct{}{}
	}
	l.held[id] = struct{}{}
	return func() { l.release(id) }, nil
}

func (l *VolumeLocks) release(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.held, id)
}
