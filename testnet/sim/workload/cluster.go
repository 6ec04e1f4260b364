package workload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agora-sched/agora/devices"
	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/devices/yamlnode"
)

// DefaultRepair is a failed node's repair time when its class gives none.
const DefaultRepair = 10 * time.Minute

// Limits on a cluster file.
const (
	// MaxClusterBytes is the largest cluster file ReadCluster reads.
	MaxClusterBytes = 4 << 20
	// MaxNodeClasses is the most entries of nodes.
	MaxNodeClasses = 10_000
	// MaxClusterNodes is the most nodes a cluster may have in all.
	MaxClusterNodes = 1_000_000
	// maxNodeGPUs is the most GPUs one node may have, as in a resources file.
	maxNodeGPUs = 64
	// maxYAMLNodes bounds the YAML nodes a file expands to with its
	// aliases resolved, against alias bombs.
	maxYAMLNodes = 1_000_000
)

// NodeClass is Count identical nodes of a simulated cluster.
type NodeClass struct {
	// Count is how many nodes the class has, at least one.
	Count int
	// Site is where the nodes are; "" is the one default site.
	Site string
	// Latency is the one-way network delay from these nodes to nodes at
	// other sites; nodes at one site reach each other without delay.
	Latency time.Duration
	// FailureRate is how often each node fails, in failures per hour:
	// the simulator draws each node's time to its next failure from an
	// exponential distribution of this rate (zero: never).
	FailureRate float64
	// Repair is how long a failed node stays down before it restarts and
	// rejoins (its mean time to repair); zero means DefaultRepair.
	Repair time.Duration
	// Bandwidth is each node's link speed in bytes per second; zero means
	// unlimited. A message between two nodes takes its encoded size over
	// the slower end's bandwidth on top of the latency, and the messages
	// of one link queue behind each other.
	Bandwidth int64
	// Join is when the class's nodes join the cluster (virtual time from
	// the start of the run); before it they are absent. Zero: from the
	// start.
	Join time.Duration
	// Leave, when set, is when the class's nodes leave the cluster
	// gracefully (drained, as a stopping node is) never to return. It is
	// after Join.
	Leave time.Duration
	// Resources is each node's capacity, GPUs numbered from zero and
	// wholly free.
	Resources resource.Vector
}

// Cluster is a simulated cluster: classes of identical nodes.
type Cluster struct {
	Nodes []NodeClass
}

// Size is the number of nodes in the cluster.
func (c *Cluster) Size() int {
	n := 0
	for _, nc := range c.Nodes {
		n += nc.Count
	}
	return n
}

// Total is the cluster's summed capacity: CPU, memory and disk added up,
// every GPU listed (renumbered from zero) and devices of the same kind
// and model added up.
func (c *Cluster) Total() resource.Vector {
	return Total(c.Nodes)
}

// Total sums the capacity of node classes; see Cluster.Total.
func Total(classes []NodeClass) resource.Vector {
	var v resource.Vector
	for _, nc := range classes {
		n := int64(nc.Count)
		v.CPU += n * nc.Resources.CPU
		v.Memory += n * nc.Resources.Memory
		v.Disk += n * nc.Resources.Disk
		for range nc.Count {
			for _, g := range nc.Resources.GPUs {
				g.Index, g.Free = len(v.GPUs), resource.WholeGPU
				v.GPUs = append(v.GPUs, g)
			}
		}
	next:
		for _, d := range nc.Resources.Devices {
			for i := range v.Devices {
				if strings.EqualFold(v.Devices[i].Kind, d.Kind) && strings.EqualFold(v.Devices[i].Model, d.Model) {
					v.Devices[i].Count += nc.Count * d.Count
					continue next
				}
			}
			v.Devices = append(v.Devices, resource.Device{Kind: d.Kind, Model: d.Model, Count: nc.Count * d.Count})
		}
	}
	return v
}

// LoadCluster reads the cluster file at path (see ReadCluster).
func LoadCluster(path string) (*Cluster, error) {
	r, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readCluster(r, filepath.Base(path))
}

// ReadCluster reads a cluster file, YAML (or JSON) of the form
//
//	nodes:
//	  - count: 40                # default 1
//	    site: eu-west            # default "", the one default site
//	    latency: 20ms            # one-way, to nodes at other sites
//	    failure_rate: 0.001      # failures per node per hour (default 0)
//	    repair: 10m              # downtime after a failure (default 10m)
//	    bandwidth: 1Gbit/s       # each node's link (default unlimited)
//	    join: 1h                 # absent until this virtual time (default 0)
//	    leave: 30h               # drained and gone from this time (default never)
//	    resources:               # a --resources file's shape
//	      cpu: 32
//	      memory: 256GiB
//	      disk: 1TiB
//	      gpus: [{model: A100, memory: 40GiB}, {model: A100, memory: 40GiB}]
//	      devices: [{kind: fpga, model: u250, count: 2}]
//
// The resources mapping is parsed by devices.ParseOverrides, exactly as a
// node's --resources file is; cpu is required and must be more than zero.
// Parsing is strict: unknown or repeated keys, wrong types and values out
// of range are rejected with a *ParseError naming the field path, such as
// "nodes[1].resources.gpus[0].memory". YAML anchors and aliases may be
// used to share a resources mapping between entries.
func ReadCluster(r io.Reader) (*Cluster, error) {
	return readCluster(r, "cluster")
}

func readCluster(r io.Reader, name string) (*Cluster, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxClusterBytes+1))
	if err != nil {
		return nil, &ParseError{Source: name, Err: err}
	}
	if len(data) > MaxClusterBytes {
		return nil, parseErr(name, 0, "", "more than %d bytes", MaxClusterBytes)
	}
	root, err := decodeYAML(data, name)
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, parseErr(name, 0, "nodes", "required: a list of node classes")
	}
	p := &clusterParser{src: name}
	c := &Cluster{}
	hasNodes := false
	err = p.eachKey(root, "", func(key, field string, v *yaml.Node) error {
		if key != "nodes" {
			return p.fail(field, v, "unknown key (want nodes)")
		}
		hasNodes = true
		if v.Kind != yaml.SequenceNode {
			return p.fail(field, v, "want a non-empty list of node classes, got %s", describe(v))
		}
		if len(v.Content) == 0 {
			return p.fail(field, v, "want a non-empty list of node classes, got an empty list")
		}
		if len(v.Content) > MaxNodeClasses {
			return p.fail(field, v, "%d entries, at most %d allowed", len(v.Content), MaxNodeClasses)
		}
		total := 0
		for i, item := range v.Content {
			nc, err := p.nodeClass(deref(item), fmt.Sprintf("%s[%d]", field, i))
			if err != nil {
				return err
			}
			if total += nc.Count; total > MaxClusterNodes {
				return p.fail(field, v, "more than %d nodes in all", MaxClusterNodes)
			}
			c.Nodes = append(c.Nodes, nc)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !hasNodes {
		return nil, parseErr(name, root.Line, "nodes", "required: a list of node classes")
	}
	return c, nil
}

type clusterParser struct{ src string }

func (p *clusterParser) fail(field string, n *yaml.Node, format string, args ...any) error {
	return &ParseError{Source: p.src, Line: n.Line, Field: field, Err: fmt.Errorf(format, args...)}
}

// eachKey calls f for each key of mapping m in file order, rejecting a
// node that is not a mapping, keys that are not names and repeated keys.
func (p *clusterParser) eachKey(m *yaml.Node, prefix string, f func(key, field string, v *yaml.Node) error) error {
	if m.Kind != yaml.MappingNode {
		return p.fail(strings.TrimSuffix(prefix, "."), m, "want a mapping, got %s", describe(m))
	}
	for _, kv := range yamlnode.Fields(m) {
		field := prefix + kv.Key
		if kv.Problem != "" {
			if kv.K.Kind != yaml.ScalarNode || kv.K.ShortTag() == "!!null" {
				field = strings.TrimSuffix(prefix, ".")
			}
			return p.fail(field, kv.K, "%s", kv.Problem)
		}
		if err := f(kv.Key, field, kv.V); err != nil {
			return err
		}
	}
	return nil
}

// nodeClass reads one entry of nodes.
func (p *clusterParser) nodeClass(n *yaml.Node, field string) (NodeClass, error) {
	nc := NodeClass{Count: 1}
	hasResources := false
	err := p.eachKey(n, field+".", func(key, kfield string, v *yaml.Node) error {
		switch key {
		case "count":
			c, err := strconv.ParseInt(v.Value, 10, 64)
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || err != nil {
				return p.fail(kfield, v, "want a whole number, got %s", describe(v))
			}
			if c < 1 || c > MaxClusterNodes {
				return p.fail(kfield, v, "%d out of range 1..%d", c, MaxClusterNodes)
			}
			nc.Count = int(c)
		case "site":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
				return p.fail(kfield, v, "want a string, got %s", describe(v))
			}
			if nc.Site = strings.TrimSpace(v.Value); len(nc.Site) > 128 {
				return p.fail(kfield, v, "longer than 128 characters")
			}
		case "latency":
			d, err := durationValue(v)
			if err != nil {
				return p.fail(kfield, v, "%v", err)
			}
			nc.Latency = d
		case "failure_rate":
			var f float64
			t := v.ShortTag()
			if v.Kind != yaml.ScalarNode || (t != "!!int" && t != "!!float") || v.Decode(&f) != nil {
				return p.fail(kfield, v, "want failures per hour as a number, got %s", describe(v))
			}
			if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 3600 {
				return p.fail(kfield, v, "%s out of range 0..3600 per hour", v.Value)
			}
			nc.FailureRate = f
		case "repair":
			d, err := virtualTime(v, time.Second)
			if err != nil {
				return p.fail(kfield, v, "%v", err)
			}
			nc.Repair = d
		case "join", "leave":
			d, err := virtualTime(v, 0)
			if err != nil {
				return p.fail(kfield, v, "%v", err)
			}
			if key == "join" {
				nc.Join = d
			} else {
				nc.Leave = d
				if d == 0 {
					return p.fail(kfield, v, "0: a class that leaves at once has no nodes (leave it out)")
				}
			}
		case "bandwidth":
			b, err := bandwidthValue(v)
			if err != nil {
				return p.fail(kfield, v, "%v", err)
			}
			nc.Bandwidth = b
		case "resources":
			hasResources = true
			res, err := p.resources(v, kfield)
			if err != nil {
				return err
			}
			nc.Resources = res
		default:
			return p.fail(kfield, v, "unknown key (want count, site, latency, failure_rate, repair, bandwidth, join, leave or resources)")
		}
		return nil
	})
	if err != nil {
		return nc, err
	}
	if !hasResources {
		return nc, p.fail(field+".resources", n, "required: the resources of each node")
	}
	if nc.Leave > 0 && nc.Leave <= nc.Join {
		return nc, p.fail(field+".leave", n, "%v is not after join (%v)", nc.Leave, nc.Join)
	}
	return nc, nil
}

// resources parses a resources mapping with devices.ParseOverrides, the
// parser of a node's --resources file, and applies it to an empty vector.
func (p *clusterParser) resources(v *yaml.Node, field string) (resource.Vector, error) {
	if v.Kind != yaml.MappingNode {
		return resource.Vector{}, p.fail(field, v, "want a mapping of cpu, memory, disk, gpus and devices, got %s", describe(v))
	}
	budget := maxYAMLNodes
	expanded, err := expand(v, &budget)
	if err != nil {
		return resource.Vector{}, p.fail(field, v, "%v", err)
	}
	data, err := yaml.Marshal(expanded)
	if err != nil {
		return resource.Vector{}, p.fail(field, v, "%v", err)
	}
	o, err := devices.ParseOverrides(data, p.src)
	if err != nil {
		var fe *devices.FileError
		if errors.As(err, &fe) {
			f := field
			if fe.Field != "" {
				f += "." + fe.Field
			}
			return resource.Vector{}, p.fail(f, v, "%v", fe.Err)
		}
		return resource.Vector{}, p.fail(field, v, "%v", err)
	}
	if o.CPU == nil || *o.CPU <= 0 {
		return resource.Vector{}, p.fail(field+".cpu", v, "required, more than zero")
	}
	return o.Apply(resource.Vector{}), nil
}

// durationValue reads a duration such as "20ms" (a bare 0 is allowed).
func durationValue(v *yaml.Node) (time.Duration, error) {
	if v.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("want a duration such as 20ms, got %s", describe(v))
	}
	if v.ShortTag() == "!!int" && v.Value == "0" {
		return 0, nil
	}
	if v.ShortTag() != "!!str" {
		return 0, fmt.Errorf("want a duration with a unit, such as 20ms, got %s", describe(v))
	}
	d, err := time.ParseDuration(strings.TrimSpace(v.Value))
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (want e.g. 20ms or 1.5s)", v.Value)
	}
	if d < 0 || d > time.Hour {
		return 0, fmt.Errorf("%s out of range 0..1h", d)
	}
	return d, nil
}

// maxVirtualTime bounds join, leave and repair times: ten years.
const maxVirtualTime = 10 * 365 * 24 * time.Hour

// virtualTime reads a point or span of virtual time such as "90m" or
// "36h" (a bare 0 is allowed when least is zero), from least to ten
// years.
func virtualTime(v *yaml.Node, least time.Duration) (time.Duration, error) {
	if v.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("want a duration such as 10m or 36h, got %s", describe(v))
	}
	if v.ShortTag() == "!!int" && v.Value == "0" && least == 0 {
		return 0, nil
	}
	if v.ShortTag() != "!!str" {
		return 0, fmt.Errorf("want a duration with a unit, such as 10m or 36h, got %s", describe(v))
	}
	d, err := time.ParseDuration(strings.TrimSpace(v.Value))
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (want e.g. 10m or 36h)", v.Value)
	}
	if d < least || d > maxVirtualTime {
		return 0, fmt.Errorf("%s out of range %v..%v", d, least, maxVirtualTime)
	}
	return d, nil
}

// bandwidthUnits are the units a bandwidth may carry, in bytes per second.
var bandwidthUnits = map[string]float64{
	"B/s": 1, "kB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "KiB/s": 1 << 10, "MiB/s": 1 << 20, "GiB/s": 1 << 30,
	"bit/s": 1.0 / 8, "kbit/s": 1e3 / 8, "Mbit/s": 1e6 / 8, "Gbit/s": 1e9 / 8,
}

// bandwidthValue reads a link speed: a whole number of bytes per second,
// or a number with a unit such as 1Gbit/s, 100Mbit/s, 10MB/s or 1GiB/s.
func bandwidthValue(v *yaml.Node) (int64, error) {
	const want = "want bytes per second, or a rate such as 1Gbit/s, 100Mbit/s or 10MB/s"
	if v.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("%s, got %s", want, describe(v))
	}
	text := strings.TrimSpace(v.Value)
	num, unit := text, "B/s"
	if v.ShortTag() != "!!int" {
		i := strings.IndexFunc(text, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i <= 0 {
			return 0, fmt.Errorf("%s, got %s", want, describe(v))
		}
		num, unit = text[:i], strings.TrimSpace(text[i:])
	}
	mult, ok := bandwidthUnits[unit]
	f, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("%s, got %s", want, describe(v))
	}
	b := f * mult
	if math.IsNaN(b) || b < 1 || b > 1e15 {
		return 0, fmt.Errorf("%s out of range 1 B/s..1 PB/s", text)
	}
	return int64(b), nil
}
