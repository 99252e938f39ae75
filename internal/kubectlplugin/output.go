package kubectlplugin

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// writeReport writes report as JSON or YAML, or calls table for the human format.
func writeReport(out io.Writer, format string, report any, table func(io.Writer) error) error {
	switch format {
	case OutputTable:
		return table(out)
	case OutputJSON:
		b, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return fmt.Errorf("encode JSON: %w", err)
		}
		_, err = out.Write(append(b, '\n'))
		return err
	case OutputYAML:
		b, err := yaml.Marshal(report)
		if err != nil {
			return fmt.Errorf("encode YAML: %w", err)
		}
		_, err = out.Write(b)
		return err
	default:
		return validateOutput(format)
	}
}

// table is a tab-separated table that aligns its columns as kubectl get does.
type table struct {
	tw *tabwriter.Writer
}

func newTable(out io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t *table) row(cells ...string) {
	// Errors surface in flush: tabwriter only writes to out there.
	_, _ = io.WriteString(t.tw, strings.Join(cells, "\t")+"\n")
}

func (t *table) flush() error {
	return t.tw.Flush()
}

// binaryUnits are the suffixes of formatBytes, each 1024 times the one before.
var binaryUnits = []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

// formatBytes writes n bytes in the largest binary unit that keeps the number at least 1, rounded to
// the nearest: one decimal below 10 (7.9Gi), none from 10 on (808Mi); a trailing ".0" is dropped
// (2Gi). The result is a valid Kubernetes quantity.
func formatBytes(n int64) string {
	if n < 0 {
		return "-" + formatBytes(-n)
	}
	v := float64(n)
	unit := 0
	for v >= 1024 && unit < len(binaryUnits)-1 {
		v /= 1024
		unit++
	}
	if unit == 0 {
		return strconv.FormatInt(n, 10)
	}
	if v < 10 {
		v = math.Round(v*10) / 10
	} else {
		v = math.Round(v)
	}
	if v >= 1024 && unit < len(binaryUnits)-1 {
		v, unit = 1, unit+1 // 1023.6Mi is 1Gi
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if v >= 10 || strings.HasSuffix(s, ".0") {
		s = strconv.FormatFloat(v, 'f', 0, 64)
	}
	return s + binaryUnits[unit]
}

// formatBytesPair formats a and b with formatBytes, adding the exact bytes when rounding makes two
// different sizes look the same ("10Gi (10694443008 bytes)" against "10Gi (10737418240 bytes)").
func formatBytesPair(a, b int64) (string, string) {
	fa, fb := formatBytes(a), formatBytes(b)
	if fa == fb && a != b {
		fa += fmt.Sprintf(" (%d bytes)", a)
		fb += fmt.Sprintf(" (%d bytes)", b)
	}
	return fa, fb
}

// barCells is the width of usageBar's bar.
const barCells = 10

// usageBar draws percent (0 to 100) as a bar of barCells cells and the number: "[#######---] 70.0%".
// Each cell stands for 10%, rounded to the nearest cell.
func usageBar(percent float64) string {
	filled := int(math.Round(percent / 100 * barCells))
	filled = max(0, min(barCells, filled))
	return fmt.Sprintf("[%s%s] %.1f%%", strings.Repeat("#", filled), strings.Repeat("-", barCells-filled), percent)
}

// orDash returns s, or "-" for an empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
