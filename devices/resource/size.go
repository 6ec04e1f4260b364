package resource

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Byte-size units accepted by ParseSize. Binary (KiB, MiB, …) and decimal
// (KB, MB, …) suffixes are both accepted; a bare K, M, G or T is binary, as
// in Kubernetes' Ki/Mi shorthand users type by habit.
var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}, {"pib", 1 << 50},
	{"ki", 1 << 10}, {"mi", 1 << 20}, {"gi", 1 << 30}, {"ti", 1 << 40}, {"pi", 1 << 50},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"pb", 1e15},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"p", 1 << 50},
	{"b", 1},
}

// ParseSize parses a byte size such as "512MiB", "40GiB", "1.5G", "4096"
// or "4096B". It rejects negative, fractional-byte and overflowing values;
// a fraction of a larger unit ("1.7GiB") is rounded to the nearest byte.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			mult = u.mult
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("invalid size %q (want e.g. 512MiB, 40GiB or a byte count)", s)
	}
	if f < 0 {
		return 0, fmt.Errorf("negative size %q", s)
	}
	v := f * mult
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q too large", s)
	}
	if mult == 1 && f != math.Trunc(f) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return int64(math.Round(v)), nil
}

// FormatSize renders bytes with the largest binary unit that keeps the
// value at or above one, e.g. 42949672960 → "40GiB".
func FormatSize(b int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	f := float64(b)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	// 1048575 bytes is 1023.999KiB, which would print as "1024.0KiB".
	if f != math.Trunc(f) && math.Round(f*10) >= 10240 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if f == math.Trunc(f) {
		return fmt.Sprintf("%d%s", int64(f), units[i])
	}
	return fmt.Sprintf("%.1f%s", f, units[i])
}

// ParseCPU parses a CPU amount into millicores: "2" and "2.5" are cores,
// "500m" is millicores. Zero is allowed; negative values are not.
func ParseCPU(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty cpu amount")
	}
	if strings.HasSuffix(t, "m") {
		n, err := strconv.ParseInt(strings.TrimSuffix(t, "m"), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("invalid cpu amount %q (want cores like 2 or 0.5, or millicores like 500m)", s)
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e9 {
		return 0, fmt.Errorf("invalid cpu amount %q (want cores like 2 or 0.5, or millicores like 500m)", s)
	}
	return int64(math.Round(f * 1000)), nil
}

// CoresFromMilli converts millicores to cores for display and JSON.
func CoresFromMilli(m int64) float64 { return float64(m) / 1000 }
