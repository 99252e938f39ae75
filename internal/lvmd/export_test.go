package lvmd

// QueuedRemoves returns how many removals of VG vg wait for the lvremove that runs (tests).
func (s *Service) QueuedRemoves(vg string) int {
	s.removes.mu.Lock()
	defer s.removes.mu.Unlock()
	return len(s.removes.queue[vg])
}
