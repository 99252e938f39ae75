package lvmd

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
)

// DeviceClassManager holds the current Config. It can be replaced at run
// time (the node agent feeds it from LVMVolumeGroups) without restarting
// lvmd; readers always see one whole configuration. It is safe for
// concurrent use.
type DeviceClassManager struct {
	cfg      atomic.Pointer[Config]
	replace  sync.Mutex // orders Replace calls with their notifications
	notifier *notifier[*Config]
}

// NewDeviceClassManager validates cfg and returns a manager holding a copy
// of it. A nil cfg makes a manager whose classes come later (the node
// agent's, fed by its volume-group controller): until the first Replace it
// lists no class and answers every lookup with ErrNotReady, so a volume
// asked for before the classes are known is retried instead of refused.
func NewDeviceClassManager(cfg *Config) (*DeviceClassManager, error) {
	m := &DeviceClassManager{notifier: newNotifier[*Config](nil)}
	if cfg == nil {
		pending := &Config{DeviceClasses: []DeviceClass{}, pending: true}
		m.cfg.Store(pending)
		m.notifier.publish(pending)
		return m, nil
	}
	if err := m.Replace(cfg); err != nil {
		return nil, err
	}
	return m, nil
}

// Config returns the current configuration. It is shared: callers must not
// modify it.
func (m *DeviceClassManager) Config() *Config { return m.cfg.Load() }

// Replace validates cfg and, if valid, atomically makes a copy of it the
// current configuration and notifies watchers. An invalid cfg leaves the
// current configuration in place, and one equal to it changes nothing and
// notifies no one (the volume-group manager feeds its classes after every
// reconcile, and each notification costs lvmd a full state read).
func (m *DeviceClassManager) Replace(cfg *Config) error {
	if cfg == nil {
		return fmt.Errorf("replace device classes: %w: no config", ErrInvalidArgument)
	}
	c := cfg.clone()
	if err := c.Validate(); err != nil {
		return fmt.Errorf("replace device classes: %w", err)
	}
	m.replace.Lock()
	defer m.replace.Unlock()
	if reflect.DeepEqual(m.cfg.Load(), c) {
		return nil
	}
	m.cfg.Store(c)
	m.notifier.publish(c)
	return nil
}

// Watch returns a channel receiving the current configuration at once and
// each replacement after it (a slow reader gets only the newest). It is
// closed when ctx ends.
func (m *DeviceClassManager) Watch(ctx context.Context) <-chan *Config {
	return m.notifier.subscribe(ctx)
}

// DeviceClass returns a copy of the class named name (the default class for
// "") from the current configuration.
func (m *DeviceClassManager) DeviceClass(name string) (DeviceClass, error) {
	dc, err := m.Config().DeviceClass(name)
	if err != nil {
		return DeviceClass{}, err
	}
	return *dc, nil
}

// clone returns a deep copy.
func (c *Config) clone() *Config {
	out := &Config{SocketName: c.SocketName}
	for _, dc := range c.DeviceClasses {
		if dc.SpareGB != nil {
			v := *dc.SpareGB
			dc.SpareGB = &v
		}
		if dc.Stripe != nil {
			v := *dc.Stripe
			dc.Stripe = &v
		}
		if dc.ThinPool != nil {
			v := *dc.ThinPool
			dc.ThinPool = &v
		}
		if dc.RAID != nil {
			v := *dc.RAID
			dc.RAID = &v
		}
		dc.LVCreateOptions = slices.Clone(dc.LVCreateOptions)
		out.DeviceClasses = append(out.DeviceClasses, dc)
	}
	for _, oc := range c.LVCreateOptionClasses {
		oc.Options = slices.Clone(oc.Options)
		out.LVCreateOptionClasses = append(out.LVCreateOptionClasses, oc)
	}
	return out
}
