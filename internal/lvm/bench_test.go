package lvm_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// fullReportWith returns the captured guest fullreport with n more thin LVs (and their segments) in
// its volume group: the size of a node's report at n volumes, which the node agent reads once a
// minute and after every change it cannot apply to its cache.
func fullReportWith(b *testing.B, n int) []byte {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "fullreport-guest-all-kinds.json"))
	if err != nil {
		b.Fatal(err)
	}
	var doc struct {
		Report []map[string][]map[string]string `json:"report"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		b.Fatal(err)
	}
	r := doc.Report[0]
	var thin, thinSeg map[string]string
	for _, lv := range r["lv"] {
		if lv["pool_lv"] != "" {
			thin = lv
		}
	}
	for _, s := range r["seg"] {
		if thin != nil && s["lv_uuid"] == thin["lv_uuid"] {
			thinSeg = s
		}
	}
	if thin == nil || thinSeg == nil {
		b.Fatal("the capture has no thin LV with a segment")
	}
	for i := range n {
		lv, seg := clone(thin), clone(thinSeg)
		uuid := fmt.Sprintf("bench-%06d-uuid", i)
		lv["lv_name"], lv["lv_uuid"], seg["lv_uuid"] = fmt.Sprintf("pvc-%06d", i), uuid, uuid
		lv["lv_path"] = "/dev/" + lv["vg_name"] + "/" + lv["lv_name"]
		lv["lv_dm_path"] = "/dev/mapper/" + lv["vg_name"] + "-" + lv["lv_name"]
		r["lv"] = append(r["lv"], lv)
		r["seg"] = append(r["seg"], seg)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// BenchmarkParseReport parses a node's lvm2 fullreport at 10, 100 and 1,000 volumes.
func BenchmarkParseReport(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		data := fullReportWith(b, n)
		b.Run(fmt.Sprintf("LVs=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				s, err := lvm.ParseReport(data)
				if err != nil {
					b.Fatal(err)
				}
				if len(s.LVs) < n {
					b.Fatalf("%d LVs parsed, want at least %d", len(s.LVs), n)
				}
			}
		})
	}
}
