package devices

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/devices/yamlnode"
)

// computeRE is the form of a CUDA compute capability, "major.minor".
var computeRE = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)

// cpuValue reads a CPU amount: a number of cores, or a string such as
// "2.5" or "500m". It returns millicores.
func cpuValue(n *yaml.Node) (int64, error) {
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!int", "!!float":
			var f float64
			if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e9 {
				return 0, fmt.Errorf("invalid cpu amount %s (want cores like 4 or 0.5, or millicores like \"500m\")", n.Value)
			}
			return int64(math.Round(f * 1000)), nil
		case "!!str":
			return resource.ParseCPU(n.Value)
		}
	}
	return 0, fmt.Errorf("want cores like 4 or 0.5, or millicores like \"500m\", got %s", kindOf(n))
}

// sizeValue reads a size: an integer byte count, or a string such as
// "16GiB".
func sizeValue(n *yaml.Node) (int64, error) {
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil {
				return 0, fmt.Errorf("invalid size %s", n.Value)
			}
			if i < 0 {
				return 0, fmt.Errorf("negative size %s", n.Value)
			}
			return i, nil
		case "!!float", "!!str":
			return resource.ParseSize(n.Value)
		}
	}
	return 0, fmt.Errorf("want a size like 16GiB or a byte count, got %s", kindOf(n))
}

// countValue reads a device count: a whole number, at least one.
func countValue(n *yaml.Node) (int, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, fmt.Errorf("want a whole number, got %s", kindOf(n))
	}
	var i int64
	if err := n.Decode(&i); err != nil {
		return 0, fmt.Errorf("invalid count %s", n.Value)
	}
	if i < 1 {
		return 0, fmt.Errorf("must be at least 1, got %d", i)
	}
	if i > maxDeviceCount {
		return 0, fmt.Errorf("at most %d, got %d", maxDeviceCount, i)
	}
	return int(i), nil
}

// nameValue reads a non-empty string of at most maxNameLen bytes.
func nameValue(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return "", fmt.Errorf("want a string, got %s", kindOf(n))
	}
	s := strings.TrimSpace(n.Value)
	if s == "" {
		return "", errors.New("empty")
	}
	if len(s) > maxNameLen {
		return "", fmt.Errorf("longer than %d characters", maxNameLen)
	}
	return s, nil
}

// computeValue reads a CUDA compute capability, "major.minor". A bare
// 8.0 in YAML is a float; its text is taken as written.
func computeValue(n *yaml.Node) (string, error) {
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!str" || n.ShortTag() == "!!float") {
		s := strings.TrimSpace(n.Value)
		if computeRE.MatchString(s) {
			return s, nil
		}
		return "", fmt.Errorf("invalid compute capability %q (want major.minor, such as \"8.0\")", n.Value)
	}
	return "", fmt.Errorf("want major.minor, such as \"8.0\", got %s", kindOf(n))
}

// deref follows YAML aliases to the node they name; kindOf names a node's
// type for messages.
var (
	deref  = yamlnode.Resolve
	kindOf = yamlnode.Describe
)
