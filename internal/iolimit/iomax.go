// Package iolimit caps a volume's throughput inside the pods that use it with the io.max file of
// cgroup v2. The pods are found from the mount table (the kubelet's target paths name the pod and
// the volume), each pod's cgroup by its UID under the cgroup root (cgroupfs and systemd drivers), and
// one io.max line per pod is written for the device the pod reads and writes.
//
// The limit is set on the pod's cgroup, so it holds for all the pod's containers together and
// survives their restarts; a new pod of the same claim gets it at publish.
package iolimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Limits are the caps of one device: bytes and operations per second, read and write; 0 is no cap.
type Limits struct {
	ReadBPS, WriteBPS, ReadIOPS, WriteIOPS uint64
}

// IsZero reports whether l caps nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// String is l as io.max writes it, without the device: "rbps=... wbps=... riops=... wiops=...".
func (l Limits) String() string {
	return fmt.Sprintf("rbps=%s wbps=%s riops=%s wiops=%s",
		maxValue(l.ReadBPS), maxValue(l.WriteBPS), maxValue(l.ReadIOPS), maxValue(l.WriteIOPS))
}

func maxValue(v uint64) string {
	if v == 0 {
		return "max"
	}
	return strconv.FormatUint(v, 10)
}

// Device is a block device number.
type Device struct{ Major, Minor uint32 }

func (d Device) String() string { return fmt.Sprintf("%d:%d", d.Major, d.Minor) }

// Line is the io.max line that sets l for d; with l zero it removes d's entry.
func Line(d Device, l Limits) string { return d.String() + " " + l.String() }

// ErrMalformed is wrapped by ParseIOMax for a line it cannot read.
var ErrMalformed = errors.New("malformed io.max")

// ParseIOMax reads an io.max file: the limits of each device listed (devices without an entry have
// none).
func ParseIOMax(content string) (map[Device]Limits, error) {
	out := map[Device]Limits{}
	for line := range strings.Lines(content) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		var d Device
		if _, err := fmt.Sscanf(fields[0], "%d:%d", &d.Major, &d.Minor); err != nil {
			return nil, fmt.Errorf("%w: device %q: %w", ErrMalformed, fields[0], err)
		}
		var l Limits
		for _, f := range fields[1:] {
			key, val, ok := strings.Cut(f, "=")
			if !ok {
				return nil, fmt.Errorf("%w: %q", ErrMalformed, f)
			}
			n := uint64(0)
			if val != "max" {
				var err error
				if n, err = strconv.ParseUint(val, 10, 64); err != nil {
					return nil, fmt.Errorf("%w: %q: %w", ErrMalformed, f, err)
				}
			}
			switch key {
			case "rbps":
				l.ReadBPS = n
			case "wbps":
				l.WriteBPS = n
			case "riops":
				l.ReadIOPS = n
			case "wiops":
				l.WriteIOPS = n
			default:
				// Newer kernels may add keys; they are not ours to judge.
			}
		}
		out[d] = l
	}
	return out, nil
}
