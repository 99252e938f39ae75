package webhook

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	lvmv1alpha1 "github.com/lvm-operator/lvm-operator/api/v1alpha1"
)

// checkLabelValues refuses StorageClass label values that are not label values. The keys are checked
// by the schema; the values cannot be, because a CRD schema cannot bound the length of map values and
// CEL's cost budget then refuses the rule.
func checkLabelValues(c *lvmv1alpha1.LVMCluster) error {
	for i, dc := range c.Spec.Storage.DeviceClasses {
		if dc.StorageClassOptions == nil {
			continue
		}
		labels := dc.StorageClassOptions.AdditionalLabels
		keys := make([]string, 0, len(labels))
		for k := range labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if errs := validation.IsValidLabelValue(labels[k]); len(errs) > 0 {
				return fmt.Errorf(
					"spec.storage.deviceClasses[%d].storageClassOptions.additionalLabels[%s]: %q is not a label value (%s): "+
						"use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
					i,
					k,
					labels[k],
					strings.Join(errs, "; "),
				)
			}
		}
	}
	return nil
}
