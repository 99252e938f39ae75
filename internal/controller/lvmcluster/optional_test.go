package lvmcluster

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// countingMapper serves only SnapshotClassGVK and counts the lookups that reach it.
type countingMapper struct {
	meta.RESTMapper
	calls int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.calls++
	return m.RESTMapper.RESTMapping(gk, versions...)
}

func TestServedRemembersAbsentKindsForAWhile(t *testing.T) {
	known := meta.NewDefaultRESTMapper(nil)
	known.Add(SnapshotClassGVK, meta.RESTScopeRoot)
	m := &countingMapper{RESTMapper: known}
	now := time.Unix(1000, 0)
	s := &scope{
		client: fake.NewClientBuilder().WithRESTMapper(m).Build(),
		absent: newAbsentKinds(func() time.Time { return now }),
	}
	ask := func(gvk schema.GroupVersionKind, want bool) {
		t.Helper()
		got, err := s.served(gvk)
		if err != nil || got != want {
			t.Fatalf("served(%s) = %v, %v; want %v", gvk.Kind, got, err, want)
		}
	}

	ask(SCCGVK, false)
	ask(SCCGVK, false)
	now = now.Add(absentRecheck - time.Second)
	ask(SCCGVK, false)
	if m.calls != 1 {
		t.Fatalf("an absent kind was looked up %d times within %v, want once", m.calls, absentRecheck)
	}
	now = now.Add(time.Second)
	ask(SCCGVK, false)
	if m.calls != 2 {
		t.Fatalf("after %v the absent kind was looked up %d times in all, want 2", absentRecheck, m.calls)
	}

	ask(SnapshotClassGVK, true)
	ask(SnapshotClassGVK, true)
	if m.calls != 4 {
		t.Errorf("a served kind was remembered as served (%d lookups in all, want 4): the mapper caches it", m.calls)
	}

	s.absent = nil
	ask(SCCGVK, false)
	ask(SCCGVK, false)
	if m.calls != 6 {
		t.Errorf("with no memory the lookups were %d in all, want 6", m.calls)
	}
}
