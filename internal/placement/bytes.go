package placement

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// binaryUnits are the suffixes of FormatBytes, each 1024 times the one before.
var binaryUnits = []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

// FormatBytes writes n bytes in the largest binary unit that keeps the number at least 1, rounded to
// the nearest: one decimal below 10 (7.9Gi), none from 10 on (808Mi); a trailing ".0" is dropped
// (2Gi). The result is a valid Kubernetes quantity.
func FormatBytes(n int64) string {
	return formatUnits(n, 10)
}

// FormatBytesExact writes n bytes in the largest binary unit with one decimal (a trailing ".0"
// dropped) followed by the exact number of bytes: "15.9Gi (17041457152 bytes)"; "512 bytes" below
// 1Ki.
func FormatBytesExact(n int64) string {
	if n > -1024 && n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%s (%d bytes)", formatUnits(n, math.Inf(1)), n)
}

// formatUnits writes n bytes in the largest binary unit that keeps the number at least 1, with one
// decimal below wholeFrom and none from it on; a trailing ".0" is dropped.
func formatUnits(n int64, wholeFrom float64) string {
	if n < 0 {
		return "-" + formatUnits(-n, wholeFrom)
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
	if v < wholeFrom {
		v = math.Round(v*10) / 10
	} else {
		v = math.Round(v)
	}
	if v >= 1024 && unit < len(binaryUnits)-1 {
		v, unit = 1, unit+1 // 1023.6Mi is 1Gi
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if v >= wholeFrom || strings.HasSuffix(s, ".0") {
		s = strconv.FormatFloat(v, 'f', 0, 64)
	}
	return s + binaryUnits[unit]
}

// formatBytesPair formats a and b with FormatBytes, adding the exact bytes when rounding makes two
// different sizes look the same ("10Gi (10694443008 bytes)" against "10Gi (10737418240 bytes)").
func formatBytesPair(a, b int64) (string, string) {
	fa, fb := FormatBytes(a), FormatBytes(b)
	if fa == fb && a != b {
		fa += fmt.Sprintf(" (%d bytes)", a)
		fb += fmt.Sprintf(" (%d bytes)", b)
	}
	return fa, fb
}
