package evacuator

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultLabel is the label that asks for a node's evacuation unless --label says otherwise.
const DefaultLabel = "lvms.topolvm.io/evacuate=true"

// Trigger is a label or annotation that asks for a node's evacuation: the key, and the value it must
// have ("" with AnyValue: any value).
type Trigger struct {
	Key, Value string
	// AnyValue: the key alone triggers, whatever its value.
	AnyValue bool
	// Annotation: the trigger is an annotation, not a label.
	Annotation bool
}

// ParseTrigger reads KEY or KEY=VALUE; KEY must be a qualified name (as label and annotation keys are).
func ParseTrigger(s string, annotation bool) (Trigger, error) {
	key, value, hasValue := strings.Cut(s, "=")
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return Trigger{}, fmt.Errorf("trigger %q: key %q: %s", s, key, strings.Join(errs, "; "))
	}
	if hasValue && !annotation {
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return Trigger{}, fmt.Errorf("trigger %q: value %q: %s", s, value, strings.Join(errs, "; "))
		}
	}
	return Trigger{Key: key, Value: value, AnyValue: !hasValue, Annotation: annotation}, nil
}

// Matches reports whether the node (its metadata) carries the trigger.
func (t Trigger) Matches(node metav1.Object) bool {
	m := node.GetLabels()
	if t.Annotation {
		m = node.GetAnnotations()
	}
	v, ok := m[t.Key]
	return ok && (t.AnyValue || v == t.Value)
}

// String is the trigger as given, with its kind.
func (t Trigger) String() string {
	kind := "label"
	if t.Annotation {
		kind = "annotation"
	}
	if t.AnyValue {
		return kind + " " + t.Key
	}
	return kind + " " + t.Key + "=" + t.Value
}
