package scheduler

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"sigs.k8s.io/yaml"
)

const (
	// DefaultListen is the address the extender serves on unless configured otherwise: the port
	// TopoLVM's deployments and its example KubeSchedulerConfiguration use (the topolvm-scheduler
	// binary alone defaults to :8000, which no TopoLVM manifest keeps).
	DefaultListen = ":9251"
	// DefaultDivisor divides a device class's free GiB before scoring when Config.Divisors has no
	// entry for it.
	DefaultDivisor = 1.0
)

// Config is the extender's configuration file. Its keys are those of topolvm-scheduler's, so a
// TopoLVM configuration file works unchanged:
//
//	listen: ":9251"
//	default-divisor: 1
//	divisors:
//	  ssd: 5
//	  hdd: 10
type Config struct {
	// Listen is the HTTP address to serve on.
	Listen string `json:"listen"`
	// DefaultDivisor divides the free GiB of device classes without an entry in Divisors.
	DefaultDivisor float64 `json:"default-divisor"`
	// Divisors maps a device-class key (the suffix of capacity.topolvm.io/<key>, "00default" for
	// the default class) to its divisor.
	Divisors map[string]float64 `json:"divisors"`
	// ProfilingBindAddress is accepted for compatibility with TopoLVM's file and not served.
	ProfilingBindAddress string `json:"profiling-bind-address"`
}

// knownKeys are the top-level keys of the configuration file.
var knownKeys = []string{"listen", "default-divisor", "divisors", "profiling-bind-address"}

// DefaultConfig returns the configuration used for keys the file does not set.
func DefaultConfig() Config {
	return Config{Listen: DefaultListen, DefaultDivisor: DefaultDivisor}
}

// ParseConfig reads a configuration file over DefaultConfig and validates it. Like
// topolvm-scheduler it accepts keys it does not know; it returns them, sorted, so that the caller
// can warn about a misspelt key.
func ParseConfig(data []byte) (Config, []string, error) {
	cfg := DefaultConfig()
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return Config{}, nil, fmt.Errorf("parse scheduler config: %w", err)
	}
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		return Config{}, nil, fmt.Errorf("parse scheduler config: %w", err)
	}
	var unknown []string
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if !slices.Contains(knownKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, nil, err
	}
	return cfg, unknown, nil
}

// Validate refuses divisors that are not positive finite numbers: a score divides by them.
func (c Config) Validate() error {
	if !validDivisor(c.DefaultDivisor) {
		return fmt.Errorf("scheduler config: default-divisor %v: must be a positive number", c.DefaultDivisor)
	}
	for _, dc := range slices.Sorted(maps.Keys(c.Divisors)) {
		if d := c.Divisors[dc]; !validDivisor(d) {
			return fmt.Errorf("scheduler config: divisors[%q] %v: must be a positive number", dc, d)
		}
	}
	return nil
}

func validDivisor(d float64) bool {
	return d > 0 && !math.IsInf(d, 1)
}
