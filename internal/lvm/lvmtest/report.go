package lvmtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lvm-operator/lvm-operator/internal/lvm"
)

// report renders `lvm fullreport --reportformat json` of the VGs named (all VGs and the orphan PVs
// when none is), every value a string as lvm2's "json" format prints it. Like lvm2's report
// without --all it lists visible LVs only, with it the internal ones too; a missing VG is lvm2's
// not-found refusal.
func report(s *lvm.State, only []string, all bool) (string, error) {
	for _, name := range only {
		if _, ok := s.VG(name); !ok {
			return "", refuse(lvm.ErrNotFound, "Volume group \"%s\" not found", name)
		}
	}
	in := func(vg string) bool { return len(only) == 0 || slices.Contains(only, vg) }
	var out struct {
		Report []map[string][]map[string]string `json:"report"`
	}
	part := map[string][]map[string]string{"vg": {}, "pv": {}, "lv": {}, "seg": {}}
	for _, vg := range s.VGs {
		if in(vg.Name) {
			part["vg"] = append(part["vg"], vgRow(vg))
		}
	}
	for _, pv := range s.PVs {
		if in(pv.VGName) {
			part["pv"] = append(part["pv"], pvRow(pv))
		}
	}
	for _, lv := range s.LVs {
		if (lv.Hidden && !all) || !in(lv.VGName) {
			continue
		}
		part["lv"] = append(part["lv"], lvRow(lv))
		for _, seg := range lv.Segments {
			part["seg"] = append(part["seg"], map[string]string{
				"lv_uuid": lv.UUID, "segtype": seg.Type, "stripes": strconv.Itoa(seg.Stripes),
				"stripe_size": u(seg.StripeSize), "chunk_size": u(seg.ChunkSize), "seg_size": u(seg.Size),
				"devices": strings.Join(seg.Devices, ","),
			})
		}
	}
	out.Report = append(out.Report, part)
	data, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("lvmtest: render report: %w", err)
	}
	return string(data), nil
}

func vgRow(vg lvm.VG) map[string]string {
	return map[string]string{
		"vg_name": vg.Name, "vg_uuid": vg.UUID, "vg_attr": vg.Attr, "vg_size": u(vg.Size), "vg_free": u(vg.Free),
		"vg_extent_size": u(vg.ExtentSize), "vg_extent_count": u(vg.ExtentCount), "vg_free_count": u(vg.FreeCount),
		"vg_tags": strings.Join(vg.Tags, ","), "pv_count": strconv.Itoa(vg.PVCount),
		"lv_count": strconv.Itoa(vg.LVCount),
	}
}

func pvRow(pv lvm.PV) map[string]string {
	return map[string]string{
		"pv_name": pv.Name, "pv_uuid": pv.UUID, "vg_name": pv.VGName, "pv_size": u(pv.Size), "pv_free": u(pv.Free),
		"dev_size": u(pv.DevSize), "pv_tags": strings.Join(pv.Tags, ","), "pv_attr": pv.Attr,
	}
}

func lvRow(lv lvm.LV) map[string]string {
	name := lv.Name
	if lv.Hidden {
		name = "[" + name + "]" // as lvm2 prints an internal LV
	}
	return map[string]string{
		"lv_name": name, "vg_name": lv.VGName, "lv_uuid": lv.UUID, "lv_attr": lv.Attr.String(),
		"lv_size": u(lv.Size), "pool_lv": lv.PoolLV, "origin": lv.Origin, "data_percent": percent(lv.DataPercent),
		"metadata_percent": percent(lv.MetadataPercent), "lv_metadata_size": u(lv.MetadataSize),
		"lv_tags": strings.Join(lv.Tags, ","), "lv_path": lv.Path, "lv_dm_path": lv.DMPath,
		"lv_read_ahead": readAhead(lv.ReadAhead), "lv_health_status": lv.HealthStatus,
	}
}

// readAhead is lv_read_ahead as lvm2 prints it with --units b: auto, or bytes.
func readAhead(r lvm.ReadAhead) string {
	switch r {
	case "", lvm.ReadAheadAuto:
		return string(lvm.ReadAheadAuto)
	case lvm.ReadAheadNone:
		return "0"
	}
	n, _ := strconv.ParseUint(string(r), 10, 64)
	return u(n * 512)
}

func percent(p float64) string {
	if p == 0 {
		return ""
	}
	return strconv.FormatFloat(p, 'f', 2, 64)
}

func u(n uint64) string { return strconv.FormatUint(n, 10) }
