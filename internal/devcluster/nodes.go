package devcluster

import "context"

// startNodes boots the guest nodes.
func (c *cluster) startNodes(_ context.Context) error { return nil }

// stopNodes stops the guest nodes.
func (c *cluster) stopNodes() error { return nil }
