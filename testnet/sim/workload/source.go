package workload

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// Kind is the kind of a workload source.
type Kind string

// The kinds of source ParseSpec recognises.
const (
	KindSynthetic Kind = "synthetic"
	KindSWF       Kind = "swf"
	KindAlibaba   Kind = "alibaba"
	KindSpecs     Kind = "specs"
)

// Source says where a workload comes from: what ParseSpec made of the
// CLI's workload argument. Open reads it.
type Source struct {
	Kind Kind
	// Path is the file to read; empty for a synthetic workload.
	Path string
	// Seed, Load, Users and Devices (Mix.Devices, beside the default
	// mix) shape a synthetic workload.
	Seed    int64
	Load    float64
	Users   int
	Devices float64
	// Jobs keeps only the first Jobs jobs (0: all); for a synthetic
	// workload it is how many to generate.
	Jobs int
	// From and To keep the jobs submitted in [From, To) (To 0: no end).
	From, To time.Duration
}

// ParseSpec parses the CLI's workload argument:
//
//	synthetic:SEED[,jobs=N][,load=L][,users=U][,devices=D]
//	PATH.swf | PATH.swf.gz            an SWF log
//	PATH.csv | PATH.csv.gz            an Alibaba GPU v2023 pod list
//	PATH.yaml | .yml | .json          a list of job specs (see ReadSpecs)
//
// A path may be followed by options too: ",jobs=N" keeps the first N
// jobs, ",from=D" and ",to=D" the jobs submitted in [D, D') of the trace
// (durations such as 30d12h are allowed, d meaning 24h). A path that
// itself ends in one of the suffixes is never split at a comma. Errors
// name what is wrong with the argument.
func ParseSpec(s string) (Source, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Source{}, fmt.Errorf("workload: empty workload (want synthetic:SEED, a .swf, .csv or .yaml file)")
	}
	if rest, ok := strings.CutPrefix(s, "synthetic:"); ok {
		return parseSynthetic(rest)
	}
	if k, ok := pathKind(s); ok {
		return Source{Kind: k, Path: s}, nil
	}
	path, opts, _ := strings.Cut(s, ",")
	k, ok := pathKind(path)
	if !ok {
		return Source{}, fmt.Errorf("workload: %q: unknown kind of file (want a name ending in .swf, .swf.gz, .csv, .yaml, .yml or .json, or synthetic:SEED)", path)
	}
	src := Source{Kind: k, Path: path}
	err := eachOption(opts, func(key, value string) error {
		var err error
		switch key {
		case "jobs":
			src.Jobs, err = positiveInt(value)
		case "from":
			src.From, err = parseDays(value)
		case "to":
			src.To, err = parseDays(value)
		default:
			return fmt.Errorf("unknown option (want jobs, from or to)")
		}
		return err
	})
	if err != nil {
		return Source{}, err
	}
	if src.To > 0 && src.To <= src.From {
		return Source{}, fmt.Errorf("workload: to=%s is not after from=%s", src.To, src.From)
	}
	return src, nil
}

func pathKind(p string) (Kind, bool) {
	l := strings.ToLower(p)
	for _, k := range []struct {
		suffix string
		kind   Kind
	}{
		{".swf", KindSWF}, {".swf.gz", KindSWF}, {".csv", KindAlibaba}, {".csv.gz", KindAlibaba},
		{".yaml", KindSpecs}, {".yml", KindSpecs}, {".json", KindSpecs},
	} {
		if strings.HasSuffix(l, k.suffix) && len(l) > len(k.suffix) {
			return k.kind, true
		}
	}
	return "", false
}

func parseSynthetic(rest string) (Source, error) {
	seedText, opts, _ := strings.Cut(rest, ",")
	seed, err := strconv.ParseInt(strings.TrimSpace(seedText), 10, 64)
	if err != nil {
		return Source{}, fmt.Errorf("workload: synthetic seed %q is not a whole number (want synthetic:SEED[,jobs=N,load=L])", seedText)
	}
	src := Source{Kind: KindSynthetic, Seed: seed}
	err = eachOption(opts, func(key, value string) error {
		var err error
		switch key {
		case "jobs":
			src.Jobs, err = positiveInt(value)
			if err == nil && src.Jobs > MaxSyntheticJobs {
				err = fmt.Errorf("%d is over the limit of %d", src.Jobs, MaxSyntheticJobs)
			}
		case "load":
			src.Load, err = strconv.ParseFloat(value, 64)
			if err != nil || math.IsNaN(src.Load) || src.Load <= 0 || src.Load > MaxLoad {
				err = fmt.Errorf("%q is not a load in (0, %d]", value, MaxLoad)
			}
		case "users":
			src.Users, err = positiveInt(value)
			if err == nil && src.Users > 10_000 {
				err = fmt.Errorf("%d is over the limit of 10000", src.Users)
			}
		case "devices":
			src.Devices, err = strconv.ParseFloat(value, 64)
			if err != nil || math.IsNaN(src.Devices) || src.Devices <= 0 || src.Devices > 10 {
				err = fmt.Errorf("%q is not a device-job share in (0, 10] (the default mix's shares add up to 1)", value)
			}
		default:
			return fmt.Errorf("unknown option (want jobs, load, users or devices)")
		}
		return err
	})
	return src, err
}

// eachOption calls f for each "key=value" of a comma-separated list,
// naming the option in any error.
func eachOption(opts string, f func(key, value string) error) error {
	if opts == "" {
		return nil
	}
	seen := map[string]bool{}
	for _, o := range strings.Split(opts, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(o), "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" {
			return fmt.Errorf("workload: option %q: want key=value", o)
		}
		if seen[key] {
			return fmt.Errorf("workload: option %s: given twice", key)
		}
		seen[key] = true
		if err := f(key, value); err != nil {
			return fmt.Errorf("workload: option %s=%s: %w", key, value, err)
		}
	}
	return nil
}

func positiveInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a whole number above zero", s)
	}
	return n, nil
}

// parseDays parses a duration of zero or more, allowing a leading count
// of days ("30d", "1d12h").
func parseDays(s string) (time.Duration, error) {
	var days int64
	rest := s
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n < 0 || n > 100_000 {
			return 0, fmt.Errorf("%q is not a duration such as 30d or 2h30m", s)
		}
		days, rest = n, s[i+1:]
	}
	var d time.Duration
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil || d < 0 {
			return 0, fmt.Errorf("%q is not a duration such as 30d or 2h30m", s)
		}
	}
	return time.Duration(days)*24*time.Hour + d, nil
}

// String renders the source in the form ParseSpec reads.
func (s Source) String() string {
	var b strings.Builder
	if s.Kind == KindSynthetic {
		fmt.Fprintf(&b, "synthetic:%d", s.Seed)
	} else {
		b.WriteString(s.Path)
	}
	if s.Jobs > 0 {
		fmt.Fprintf(&b, ",jobs=%d", s.Jobs)
	}
	if s.Load > 0 {
		fmt.Fprintf(&b, ",load=%g", s.Load)
	}
	if s.Users > 0 {
		fmt.Fprintf(&b, ",users=%d", s.Users)
	}
	if s.Devices > 0 {
		fmt.Fprintf(&b, ",devices=%g", s.Devices)
	}
	if s.From > 0 {
		fmt.Fprintf(&b, ",from=%s", s.From)
	}
	if s.To > 0 {
		fmt.Fprintf(&b, ",to=%s", s.To)
	}
	return b.String()
}

// Open reads or generates the workload. capacity is the simulated
// cluster's total (Cluster.Total), which sizes a synthetic workload's
// arrival rate; node, its largest node, bounds a synthetic replica's
// request (zero: no bound). A trace's jobs keep their own submit times
// unless From is set, in which case the window is rebased to start at zero.
func (s Source) Open(capacity, node resource.Vector) (*Workload, error) {
	var w *Workload
	var err error
	switch s.Kind {
	case KindSynthetic:
		opts := SyntheticOptions{Jobs: s.Jobs, Load: s.Load, Users: s.Users, Capacity: capacity, Node: node}
		if s.Devices > 0 {
			opts.Mix = DefaultMix
			opts.Mix.Devices = s.Devices
		}
		return Synthetic(s.Seed, opts), nil
	case KindSWF:
		return OpenSWF(s.Path, SWFOptions{Limit: s.Jobs, From: s.From, To: s.To, Rebase: s.From > 0})
	case KindAlibaba:
		w, err = OpenAlibabaPods(s.Path)
	case KindSpecs:
		w, err = OpenSpecs(s.Path)
	default:
		return nil, fmt.Errorf("workload: unknown source kind %q", s.Kind)
	}
	if err != nil {
		return nil, err
	}
	w.Window(s.From, s.To)
	w.Limit(s.Jobs)
	if s.From > 0 {
		w.Rebase()
	}
	return w, nil
}
