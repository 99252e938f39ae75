package kubectlplugin

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
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

// leftOut counts the devices a table of disks leaves out: the node agents report them as excluded
// devices, but they are never disks to build on.
type leftOut struct {
	// lvs are LVM logical volumes: thin pools, their parts, volumes.
	lvs int
	// loops are the loop devices the kubelet attaches to Block volumes while a pod uses them.
	loops int
	// crypts are the dm-crypt mappings of encrypted volumes staged on the node.
	crypts int
}

// skip counts d and reports true when the table leaves it out.
func (l *leftOut) skip(d Disk) bool {
	switch {
	case d.LogicalVolume:
		l.lvs++
	case d.KubeletLoop:
		l.loops++
	case d.EncryptedVolume:
		l.crypts++
	default:
		return false
	}
	return true
}

// write says how many devices of each kind the table left out, if any.
func (l leftOut) write(out io.Writer) error {
	var lines []string
	if l.lvs > 0 {
		lines = append(lines, fmt.Sprintf(
			"%d LVM logical volume(s) left out (thin pools and volumes are not disks; -o yaml lists them).", l.lvs))
	}
	if l.loops > 0 {
		lines = append(lines, fmt.Sprintf(
			"%d loop device(s) of the kubelet left out (it attaches one to each Block volume in use; -o yaml "+
				"lists them).", l.loops))
	}
	if l.crypts > 0 {
		lines = append(lines, fmt.Sprintf(
			"%d dm-crypt mapping(s) of encrypted volumes left out (one per volume staged on its node; -o yaml "+
				"lists them).", l.crypts))
	}
	if len(lines) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(out, "\n%s\n", strings.Join(lines, "\n"))
	return err
}
