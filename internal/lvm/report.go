package lvm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Columns requested from `lvm fullreport`, one list per sub-report.
const (
	vgColumns = "vg_name,vg_uuid,vg_attr,vg_size,vg_free,vg_extent_size,vg_extent_count," +
		"vg_free_count,vg_tags,pv_count,lv_count,vg_missing_pv_count"
	pvColumns = "pv_name,pv_uuid,vg_name,pv_size,pv_free,dev_size,pv_tags,pv_attr"
	lvColumns = "lv_name,vg_name,lv_uuid,lv_attr,lv_size,pool_lv,origin,data_percent," +
		"metadata_percent,lv_metadata_size,lv_tags,lv_path,lv_dm_path,sync_percent,lv_health_status,lv_read_ahead"
	segColumns   = "lv_uuid,segtype,stripes,stripe_size,chunk_size,seg_size,devices"
	pvsegColumns = "pvseg_start"
)

// ReportArgs returns the `lvm fullreport` arguments (after "lvm") of a
// state read of vgs (all VGs and orphan PVs when none are given); fakes use
// it to script State.
func ReportArgs(vgs ...string) []string {
	args := []string{
		"fullreport", "--reportformat", "json", "--units", "b", "--nosuffix",
		"--configreport", "vg", "-o", vgColumns,
		"--configreport", "pv", "-o", pvColumns,
		"--configreport", "lv", "-o", lvColumns,
		"--configreport", "seg", "-o", segColumns,
		"--configreport", "pvseg", "-o", pvsegColumns,
	}
	return append(args, vgs...)
}

// row is one report line. Values are kept as text: lvm2's "json" format
// prints every value as a string, "json_std" prints numbers and lists.
type row map[string]json.RawMessage

type rawReport struct {
	Report []struct {
		VG  []row `json:"vg"`
		PV  []row `json:"pv"`
		LV  []row `json:"lv"`
		Seg []row `json:"seg"`
	} `json:"report"`
}

// DecodeReport reads `lvm fullreport` JSON output into a State.
func DecodeReport(r io.Reader) (*State, error) {
	var raw rawReport
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, fmt.Errorf("decode lvm report: %w", err)
	}
	return raw.state()
}

// ParseReport parses `lvm fullreport` JSON output.
func ParseReport(data []byte) (*State, error) {
	return DecodeReport(bytes.NewReader(data))
}

func (raw *rawReport) state() (*State, error) {
	s := &State{}
	for _, part := range raw.Report {
		segs := map[string][]Segment{}
		for _, r := range part.Seg {
			seg, uuid, err := parseSeg(r)
			if err != nil {
				return nil, err
			}
			segs[uuid] = append(segs[uuid], seg)
		}
		for _, r := range part.VG {
			vg, err := parseVG(r)
			if err != nil {
				return nil, err
			}
			s.VGs = append(s.VGs, vg)
		}
		for _, r := range part.PV {
			pv, err := parsePV(r)
			if err != nil {
				return nil, err
			}
			s.PVs = append(s.PVs, pv)
		}
		for _, r := range part.LV {
			lv, err := parseLV(r)
			if err != nil {
				return nil, err
			}
			lv.Segments = segs[lv.UUID]
			s.LVs = append(s.LVs, lv)
		}
	}
	return s, nil
}

func parseVG(r row) (VG, error) {
	p := parser{row: r, what: "vg"}
	vg := VG{
		Name:        p.str("vg_name"),
		UUID:        p.str("vg_uuid"),
		Attr:        p.str("vg_attr"),
		Size:        p.uint("vg_size"),
		Free:        p.uint("vg_free"),
		ExtentSize:  p.uint("vg_extent_size"),
		ExtentCount: p.uint("vg_extent_count"),
		FreeCount:   p.uint("vg_free_count"),
		Tags:        p.list("vg_tags"),
		PVCount:     int(p.uint("pv_count")),
		LVCount:     int(p.uint("lv_count")),
		MissingPVs:  int(p.uint("vg_missing_pv_count")),
	}
	return vg, p.err
}

func parsePV(r row) (PV, error) {
	p := parser{row: r, what: "pv"}
	pv := PV{
		Name:    p.str("pv_name"),
		UUID:    p.str("pv_uuid"),
		VGName:  p.str("vg_name"),
		Attr:    p.str("pv_attr"),
		Size:    p.uint("pv_size"),
		Free:    p.uint("pv_free"),
		DevSize: p.uint("dev_size"),
		Tags:    p.list("pv_tags"),
	}
	return pv, p.err
}

func parseLV(r row) (LV, error) {
	p := parser{row: r, what: "lv"}
	name := p.str("lv_name")
	hidden := strings.HasPrefix(name, "[") && strings.HasSuffix(name, "]")
	lv := LV{
		Name:            strings.TrimSuffix(strings.TrimPrefix(name, "["), "]"),
		Hidden:          hidden,
		VGName:          p.str("vg_name"),
		UUID:            p.str("lv_uuid"),
		Size:            p.uint("lv_size"),
		PoolLV:          strings.Trim(p.str("pool_lv"), "[]"),
		Origin:          strings.Trim(p.str("origin"), "[]"),
		DataPercent:     p.float("data_percent"),
		MetadataPercent: p.float("metadata_percent"),
		MetadataSize:    p.uint("lv_metadata_size"),
		Tags:            p.list("lv_tags"),
		Path:            p.str("lv_path"),
		DMPath:          p.str("lv_dm_path"),
		SyncPercent:     p.float("sync_percent"),
		HealthStatus:    p.str("lv_health_status"),
	}
	ra, err := parseReadAhead(p.str("lv_read_ahead"))
	if err != nil {
		p.fail("lv_read_ahead", err)
	}
	lv.ReadAhead = ra
	attr := p.str("lv_attr")
	if p.err == nil {
		a, err := ParseLVAttr(attr)
		if err != nil {
			return lv, fmt.Errorf("lv %s/%s: %w", lv.VGName, lv.Name, err)
		}
		lv.Attr = a
		switch a.VolumeType {
		case VolumeTypeThinPoolData, VolumeTypeMetadata, VolumeTypeImage, VolumeTypeImageNoSync,
			VolumeTypeMirrorLog, VolumeTypeVDOPoolData:
			lv.Hidden = true
		}
	}
	return lv, p.err
}

func parseSeg(r row) (Segment, string, error) {
	p := parser{row: r, what: "seg"}
	seg := Segment{
		Type:       p.str("segtype"),
		Stripes:    int(p.uint("stripes")),
		StripeSize: p.uint("stripe_size"),
		ChunkSize:  p.uint("chunk_size"),
		Size:       p.uint("seg_size"),
		Devices:    p.list("devices"),
	}
	return seg, p.str("lv_uuid"), p.err
}

// parser converts report values, remembering the first error.
type parser struct {
	row  row
	what string
	err  error
}

// str returns the value of key as text: strings unquoted, numbers as
// printed, lists joined with ",", null and absent as "".
func (p *parser) str(key string) string {
	v, ok := p.row[key]
	if !ok || len(v) == 0 || string(v) == "null" {
		return ""
	}
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			p.fail(key, err)
		}
		return s
	case '[':
		var list []string
		if err := json.Unmarshal(v, &list); err != nil {
			p.fail(key, err)
		}
		return strings.Join(list, ",")
	default:
		return string(v)
	}
}

func (p *parser) list(key string) []string {
	s := p.str(key)
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func (p *parser) uint(key string) uint64 {
	s := p.str(key)
	if s == "" {
		return 0
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		// Some lvm2 versions print sizes as floats ("104857600.00").
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f < 0 || f > math.MaxUint64 || math.IsNaN(f) {
			p.fail(key, err)
			return 0
		}
		return uint64(f)
	}
	return n
}

func (p *parser) float(key string) float64 {
	s := p.str(key)
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		p.fail(key, fmt.Errorf("invalid number %q", s))
		return 0
	}
	return f
}

func (p *parser) fail(key string, err error) {
	if p.err == nil {
		p.err = fmt.Errorf("%s report field %s: %w", p.what, key, err)
	}
}
