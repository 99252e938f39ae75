package lvmd

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// Config is lvmd's configuration file. Field names follow TopoLVM's lvmd
// configuration where it has them; RAID is our addition.
type Config struct {
	// SocketName is the unix socket path; the --socket flag overrides it.
	SocketName string `json:"socket-name,omitempty"`
	// DeviceClasses are the classes volumes can be created in.
	DeviceClasses []DeviceClass `json:"device-classes"`
	// LVCreateOptionClasses are named sets of lvcreate options a request
	// may select instead of its class's options.
	LVCreateOptionClasses []LVCreateOptionClass `json:"lvcreate-option-classes,omitempty"`

	// pending marks the placeholder of a DeviceClassManager that has not been given its classes
	// yet: lookups answer ErrNotReady (retry), not ErrUnknownDeviceClass (give up).
	pending bool
}

// DeviceClassType is the kind of LVs a class holds.
type DeviceClassType string

// Device class types. An empty type means thick.
const (
	TypeThick DeviceClassType = "thick"
	TypeThin  DeviceClassType = "thin"
)

// DefaultSpareGB is the spare capacity of a class without spare-gb (as in
// TopoLVM).
const DefaultSpareGB = 10

// DeviceClass maps a class name to a volume group (and a thin pool).
type DeviceClass struct {
	Name        string `json:"name"`
	VolumeGroup string `json:"volume-group"`
	// Default marks the class used when a request names none (at most one).
	Default bool `json:"default,omitempty"`
	// SpareGB is GiB of the VG kept free (thick classes); nil means
	// DefaultSpareGB.
	SpareGB *uint64 `json:"spare-gb,omitempty"`
	// Stripe is the number of stripes of thick LVs (lvcreate -i).
	Stripe *uint `json:"stripe,omitempty"`
	// StripeSize is passed to lvcreate -I as written, e.g. "64k".
	StripeSize string `json:"stripe-size,omitempty"`
	// LVCreateOptions are extra lvcreate arguments for LVs of this class.
	LVCreateOptions []string        `json:"lvcreate-options,omitempty"`
	Type            DeviceClassType `json:"type,omitempty"`
	// ThinPool is required for thin classes.
	ThinPool *ThinPoolConfig `json:"thin-pool,omitempty"`
	// RAID makes thick LVs RAID LVs.
	RAID *RAIDConfig `json:"raid,omitempty"`
}

// ThinPoolConfig names the thin pool of a thin class.
type ThinPoolConfig struct {
	Name string `json:"name"`
	// OverprovisionRatio bounds the sum of the thin LVs' virtual sizes to
	// this multiple of the pool size (≥ 1).
	OverprovisionRatio float64 `json:"overprovision-ratio"`
}

// RAIDConfig selects an lvm2 RAID layout for the LVs of a thick class.
type RAIDConfig struct {
	Type lvm.RAIDType `json:"type"`
	// Mirrors is the number of additional copies (raid1, raid10).
	Mirrors int `json:"mirrors,omitempty"`
	// Stripes is the number of data stripes (raid4/5/6/10).
	Stripes int `json:"stripes,omitempty"`
	// StripeSize is passed to lvcreate -I as written.
	StripeSize string `json:"stripe-size,omitempty"`
}

// LVCreateOptionClass is a named set of extra lvcreate arguments.
type LVCreateOptionClass struct {
	Name    string   `json:"name"`
	Options []string `json:"options"`
}

// IsThin reports whether the class holds thin LVs.
func (dc *DeviceClass) IsThin() bool { return dc.Type == TypeThin }

// SpareBytes returns the bytes of the VG kept free.
func (dc *DeviceClass) SpareBytes() uint64 {
	gb := uint64(DefaultSpareGB)
	if dc.SpareGB != nil {
		gb = *dc.SpareGB
	}
	return gb << 30
}

// LoadConfig reads and validates a YAML configuration file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read lvmd config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("lvmd config %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses YAML (or JSON) strictly, unknown fields are errors,
// and validates the result. A configuration file must name at least one
// device class (a live configuration, see DeviceClassManager.Replace, may
// have none: a node without volume groups yet).
func ParseConfig(data []byte) (*Config, error) {
	var cfg Config
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, fmt.Errorf("%w: parse: %w", ErrInvalidArgument, err)
	}
	if len(cfg.DeviceClasses) == 0 {
		return nil, fmt.Errorf("%w: device-classes: at least one device class is required", ErrInvalidArgument)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// classNameRE and maxClassNameLen: device and option class names (Kubernetes parameter values,
// TopoLVM allows any non-empty string; we keep to a safe set). The length is checked apart: a
// counted repetition such as {0,251} compiles into that many copies of the class, which cost 35 ms
// of the process's start in a UML node.
var classNameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9._-]*[a-zA-Z0-9])?$`)

const maxClassNameLen = 253

// validClassName reports whether name is a valid device or option class name.
func validClassName(name string) bool {
	return len(name) <= maxClassNameLen && classNameRE.MatchString(name)
}

// Validate checks the configuration and returns every problem found, joined,
// each wrapping ErrInvalidArgument. No device classes is valid.
func (c *Config) Validate() error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...))
	}
	var names, defaults []string
	for i := range c.DeviceClasses {
		dc := &c.DeviceClasses[i]
		where := fmt.Sprintf("device-classes[%d] (%q)", i, dc.Name)
		if slices.Contains(names, dc.Name) {
			fail("%s: duplicate name", where)
		}
		names = append(names, dc.Name)
		if dc.Default {
			defaults = append(defaults, dc.Name)
		}
		for _, err := range dc.validate() {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	if len(defaults) > 1 {
		fail("device-classes: more than one default class: %v", defaults)
	}
	var ocNames []string
	for i, oc := range c.LVCreateOptionClasses {
		where := fmt.Sprintf("lvcreate-option-classes[%d] (%q)", i, oc.Name)
		switch {
		case !validClassName(oc.Name):
			fail("%s: name must be 1-253 letters, digits, '.', '_' or '-'", where)
		case slices.Contains(ocNames, oc.Name):
			fail("%s: duplicate name", where)
		case len(oc.Options) == 0:
			fail("%s: options must not be empty", where)
		case slices.Contains(oc.Options, ""):
			fail("%s: options must not contain empty strings", where)
		}
		ocNames = append(ocNames, oc.Name)
	}
	return errors.Join(errs...)
}

func (dc *DeviceClass) validate() []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...))
	}
	if !validClassName(dc.Name) {
		fail("name must be 1-253 letters, digits, '.', '_' or '-'")
	}
	if lvm.ValidName(dc.VolumeGroup) != nil {
		fail("volume-group %q is not a valid LVM VG name", dc.VolumeGroup)
	}
	if dc.Stripe != nil && *dc.Stripe == 0 {
		fail("stripe must be at least 1")
	}
	if dc.StripeSize != "" && lvm.ValidSizeArg(dc.StripeSize) != nil {
		fail("stripe-size %q is not a size such as 64k", dc.StripeSize)
	}
	if slices.Contains(dc.LVCreateOptions, "") {
		fail("lvcreate-options must not contain empty strings")
	}
	switch dc.Type {
	case "", TypeThick:
		if dc.ThinPool != nil {
			fail("thin-pool is set but type is not %q", TypeThin)
		}
	case TypeThin:
		errs = append(errs, dc.validateThin()...)
	default:
		fail("type %q is neither %q nor %q", dc.Type, TypeThick, TypeThin)
	}
	if dc.RAID != nil {
		errs = append(errs, dc.validateRAID()...)
	}
	return errs
}

func (dc *DeviceClass) validateThin() []error {
	var errs []error
	if dc.ThinPool == nil {
		return []error{fmt.Errorf("%w: type thin needs thin-pool", ErrInvalidArgument)}
	}
	if lvm.ValidName(dc.ThinPool.Name) != nil {
		errs = append(
			errs,
			fmt.Errorf("%w: thin-pool name %q is not a valid LVM LV name", ErrInvalidArgument, dc.ThinPool.Name),
		)
	}
	if !(dc.ThinPool.OverprovisionRatio >= 1) {
		errs = append(errs, fmt.Errorf("%w: thin-pool overprovision-ratio %v must be at least 1",
			ErrInvalidArgument, dc.ThinPool.OverprovisionRatio))
	}
	if dc.Stripe != nil || dc.StripeSize != "" || dc.RAID != nil {
		errs = append(
			errs,
			fmt.Errorf("%w: stripe, stripe-size and raid do not apply to thin classes", ErrInvalidArgument),
		)
	}
	return errs
}

func (dc *DeviceClass) validateRAID() []error {
	r := dc.RAID
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: raid: "+format, append([]any{ErrInvalidArgument}, args...)...))
	}
	switch r.Type {
	case lvm.RAID1:
		if r.Stripes > 1 {
			fail("raid1 does not stripe")
		}
	case lvm.RAID10:
	case lvm.RAID4, lvm.RAID5, lvm.RAID6:
		if r.Mirrors > 0 {
			fail("%s has no mirrors", r.Type)
		}
	default:
		fail("type %q is not one of raid1, raid4, raid5, raid6, raid10", r.Type)
	}
	if r.Mirrors < 0 || r.Stripes < 0 {
		fail("mirrors and stripes must not be negative")
	}
	if r.StripeSize != "" && lvm.ValidSizeArg(r.StripeSize) != nil {
		fail("stripe-size %q is not a size such as 64k", r.StripeSize)
	}
	if dc.Stripe != nil || dc.StripeSize != "" {
		fail("use raid.stripes and raid.stripe-size instead of stripe and stripe-size")
	}
	return errs
}

// DeviceClass returns the class named name, or the default class when name
// is empty.
func (c *Config) DeviceClass(name string) (*DeviceClass, error) {
	if c.pending {
		return nil, ErrClassesPending
	}
	for i := range c.DeviceClasses {
		dc := &c.DeviceClasses[i]
		if dc.Name == name || (name == "" && dc.Default) {
			return dc, nil
		}
	}
	if name == "" {
		return nil, fmt.Errorf("%w: no device class given and none is the default", ErrUnknownDeviceClass)
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownDeviceClass, name)
}

// OptionClass returns the lvcreate option class named name.
func (c *Config) OptionClass(name string) (*LVCreateOptionClass, error) {
	for i := range c.LVCreateOptionClasses {
		if c.LVCreateOptionClasses[i].Name == name {
			return &c.LVCreateOptionClasses[i], nil
		}
	}
	return nil, fmt.Errorf("%w: unknown lvcreate option class %q", ErrInvalidArgument, name)
}
