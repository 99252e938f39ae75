package driver

import (
	"fmt"
	"strconv"
	"strings"
)

// ClassKey is the device-class key of the capacity annotations: the class's name, and
// DefaultDeviceClassKey for "" (the default class).
func ClassKey(deviceClass string) string {
	if deviceClass == "" {
		return DefaultDeviceClassKey
	}
	return deviceClass
}

// CapacityAnnotation returns the annotation key of deviceClass's bytes ("" is the default class).
func CapacityAnnotation(deviceClass string) string {
	return CapacityAnnotationPrefix + ClassKey(deviceClass)
}

// FormatBytes is the annotation value of n bytes: decimal, no unit.
func FormatBytes(n uint64) string { return strconv.FormatUint(n, 10) }

// FreeBytes reads the free bytes of deviceClass from a Node's annotations. present is false
// without the annotation; a value that is not decimal bytes is an error.
func FreeBytes(annotations map[string]string, deviceClass string) (free uint64, present bool, err error) {
	key := CapacityAnnotation(deviceClass)
	v, ok := annotations[key]
	if !ok {
		return 0, false, nil
	}
	free, err = strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("annotation %s is %q, not a number of bytes", key, v)
	}
	return free, true, nil
}

// Requests reads what a Pod's capacity annotations ask for, by device-class key. An annotation
// with an empty key, or a value that is not a non-negative integer, asks for nothing, as in
// TopoLVM: the pod is then placed without that check rather than never.
func Requests(annotations map[string]string) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range annotations {
		dc, ok := strings.CutPrefix(k, CapacityAnnotationPrefix)
		if !ok || dc == "" {
			continue
		}
		if n, err := strconv.ParseUint(v, 10, 64); err == nil && n <= 1<<63-1 {
			out[dc] = n
		}
	}
	return out
}

// Fit is whether a node can hold a request of a device class, judged by its capacity annotation.
type Fit string

// The verdicts of NodeFit.
const (
	// Fits: the annotation says there is room.
	Fits Fit = "Fits"
	// TooSmall: the annotation says there is less free than requested.
	TooSmall Fit = "TooSmall"
	// NoAnnotation: the node publishes no capacity of the class.
	NoAnnotation Fit = "NoAnnotation"
	// Malformed: the annotation is not a number of bytes.
	Malformed Fit = "Malformed"
)

// NodeFit judges whether requested bytes of deviceClass fit a Node with these annotations, and
// returns the free bytes it read (0 unless present and well formed) and, for Malformed, FreeBytes'
// error. It is the one fit check of the product: the scheduler extender's filter and `kubectl lvms
// why` use it, and the CSI controller reads the same annotation with FreeBytes.
func NodeFit(annotations map[string]string, deviceClass string, requested uint64) (Fit, uint64, error) {
	free, present, err := FreeBytes(annotations, deviceClass)
	switch {
	case !present:
		return NoAnnotation, 0, nil
	case err != nil:
		return Malformed, 0, err
	case free < requested:
		return TooSmall, free, nil
	}
	return Fits, free, nil
}
