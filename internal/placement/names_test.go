package placement

import (
	"testing"

	lvmcsi "github.com/lvm-operator/lvm-operator/internal/csi"
)

// TestNamesMatchDriver guards the copies in names.go against drift from the CSI driver's names.
func TestNamesMatchDriver(t *testing.T) {
	for got, want := range map[string]string{
		DriverName:                        lvmcsi.DriverName,
		ParamDeviceClass:                  lvmcsi.ParamDeviceClass,
		CapacityAnnotationPrefix + "thin": lvmcsi.CapacityAnnotation("thin"),
		TopologyNodeKey:                   lvmcsi.TopologyNodeKey,
	} {
		if got != want {
			t.Errorf("placement uses %q where the driver uses %q", got, want)
		}
	}
}
