package spec

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/agora-sched/agora/devices/yamlnode"
)

// decoder walks a spec's YAML node tree, converting values to the model
// and recording every problem with its field path and line.
type decoder struct {
	errs *errorList
	// text counts the bytes of keys and strings decoded so far, aliases
	// expanded, to bound the work a small spec full of aliases can cause.
	text int
}

// spend counts n bytes of decoded text at path and reports whether the
// spec is still within MaxJobBytes; the first time it is not, it records
// the problem, and decoding stops.
func (d *decoder) spend(n int, path string, line int) bool {
	if d.text > MaxJobBytes {
		return false
	}
	d.text += n + 1
	if d.text > MaxJobBytes {
		d.errs.fail(path, line, "the job holds more than %d bytes of text once aliases are expanded", MaxJobBytes)
		d.errs.stopped = true
		return false
	}
	return true
}

// resolve, isNull and describe are yamlnode's, under the names the
// decoder has always used.
var (
	resolve  = yamlnode.Resolve
	isNull   = yamlnode.IsNull
	describe = yamlnode.Describe
)

// mapping walks the fields of mapping n at path, calling fn for each. With
// known set, keys outside it are unknown fields and null values are skipped
// as if absent; with known nil (a free-form map such as env) every key goes
// to fn. Duplicate keys, non-string keys and merge keys are rejected.
func (d *decoder) mapping(n *yaml.Node, path string, known []string, fn func(key string, v *yaml.Node, p string)) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.errs.fail(path, n.Line, "must be a mapping, got %s", describe(n))
		return
	}
	for _, f := range yamlnode.Fields(n) {
		if d.errs.full() {
			return
		}
		p := keyPath(path, f.Key)
		if f.Problem != "" {
			if f.K.Kind != yaml.ScalarNode {
				p = path // a key that is no string has no path of its own
			}
			d.errs.fail(p, f.K.Line, "%s", f.Problem)
			continue
		}
		if !d.spend(len(f.Key), p, f.K.Line) {
			return
		}
		if known != nil {
			if !slices.Contains(known, f.Key) {
				d.errs.fail(p, f.K.Line, "unknown field%s", Suggest(f.Key, known))
				continue
			}
			if isNull(f.V) {
				continue
			}
		}
		fn(f.Key, f.V, p)
	}
}

// count returns the number of entries in mapping n, or 0 if it is not one.
func count(n *yaml.Node) int {
	if n = resolve(n); n.Kind == yaml.MappingNode {
		return len(n.Content) / 2
	}
	return 0
}

// sequence returns the elements of list n at path.
// It reports a problem and returns false when n is not a list or holds
// more than max elements, what naming them in the message.
func (d *decoder) sequence(n *yaml.Node, path string, max int, what string) ([]*yaml.Node, bool) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		d.errs.fail(path, n.Line, "must be a list, got %s", describe(n))
		return nil, false
	}
	if len(n.Content) > max {
		d.errs.fail(path, n.Line, "%d %s, over the limit of %d", len(n.Content), what, max)
		return nil, false
	}
	return n.Content, true
}

// str decodes a string. Other scalars are rejected, not converted, so that
// 010, 1e3 or true never silently change meaning; the message says to quote.
func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return n.Value, d.spend(len(n.Value), path, n.Line)
	}
	hint := ""
	if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
		hint = " (quote it: " + quote(n.Value) + ")"
	}
	d.errs.fail(path, n.Line, "must be a string, got %s%s", describe(n), hint)
	return "", false
}

// elem decodes the string at index i of the list at path. It is str with
// a fast path that builds no path unless there is a problem to report.
func (d *decoder) elem(n *yaml.Node, path string, i int) (string, bool) {
	if r := resolve(n); r.Kind == yaml.ScalarNode && r.ShortTag() == "!!str" && d.text+len(r.Value)+1 <= MaxJobBytes {
		d.text += len(r.Value) + 1
		return r.Value, true
	}
	return d.str(n, index(path, i))
}

// integer decodes a whole number that fits in 32 bits.
func (d *decoder) integer(n *yaml.Node, path string) (int, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		var v int64
		if err := n.Decode(&v); err == nil && v >= math.MinInt32 && v <= math.MaxInt32 {
			return int(v), true
		}
		d.errs.fail(path, n.Line, "%s is out of range", quote(n.Value))
		return 0, false
	}
	d.errs.fail(path, n.Line, "must be a whole number, got %s", describe(n))
	return 0, false
}

// number decodes a finite number, whole or not.
func (d *decoder) number(n *yaml.Node, path string) (float64, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		var f float64
		if err := n.Decode(&f); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, true
		}
		d.errs.fail(path, n.Line, "%s is not a finite number", quote(n.Value))
		return 0, false
	}
	d.errs.fail(path, n.Line, "must be a number, got %s", describe(n))
	return 0, false
}

// boolean decodes true or false.
func (d *decoder) boolean(n *yaml.Node, path string) (bool, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		var b bool
		if err := n.Decode(&b); err == nil {
			return b, true
		}
	}
	d.errs.fail(path, n.Line, "must be true or false, got %s", describe(n))
	return false, false
}

// duration decodes a positive Go duration string such as "90s" or "2h".
func (d *decoder) duration(n *yaml.Node, path string) (time.Duration, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.errs.fail(path, n.Line, "must be a duration such as 90s, 45m or 2h, got %s", describe(n))
		return 0, false
	}
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		d.errs.fail(path, n.Line, "invalid duration %s (want e.g. 90s, 45m or 2h)", quote(n.Value))
		return 0, false
	}
	if v <= 0 {
		d.errs.fail(path, n.Line, "%s must be greater than zero (leave the field out for none)", quote(n.Value))
		return 0, false
	}
	return v, true
}

// Suggest names the known name closest to an unknown one, if any is close
// (" (did you mean \"x\"?)"), for spec fields and the CLI's commands.
func Suggest(key string, known []string) string {
	if len(key) > 32 {
		return ""
	}
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return fmt.Sprintf(" (did you mean %q?)", k)
		}
		if dist := editDistance(strings.ToLower(key), k); dist < bestDist && dist < len(k) {
			best, bestDist = k, dist
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
