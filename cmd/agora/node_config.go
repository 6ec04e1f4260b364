package main

import (
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/agora-sched/agora/devices/yamlnode"
	"github.com/agora-sched/agora/market/spec"
	"go.yaml.in/yaml/v3"
)

// The node's configuration file (agora node --config FILE, by convention
// /etc/agora/agora.yaml) has one key per flag of `agora node`, named as
// the flag without its dashes:
//
//	data: /var/lib/agora
//	listen: [/ip4/0.0.0.0/tcp/4001, /ip4/0.0.0.0/udp/4001/quic-v1]
//	label: {zone: a, rack: r12}
//	advert-interval: 2s
//
// A repeatable flag takes a list (label also a mapping); the others one
// value. A flag given on the command line overrides its key. The file is
// read strictly: an unknown key, a list where one value is wanted or a
// bad value is an error naming its line, and the node does not start.

// maxConfigBytes bounds the configuration file.
const maxConfigBytes = 1 << 20

// applyConfigFile sets fs's flags from the file at path, but for those
// already set on the command line.
func applyConfigFile(fs *flag.FlagSet, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	if len(b) > maxConfigBytes {
		return fmt.Errorf("--config %s: %d bytes, over the %d-byte limit", path, len(b), maxConfigBytes)
	}
	root, err := yamlnode.Decode(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if root == nil {
		return nil // an empty file: every flag at its default
	}
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d: want a mapping of flag names to values, got %s", path, root.Line, yamlnode.Describe(root))
	}
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "config" {
			names = append(names, f.Name)
		}
	})
	sort.Strings(names)
	for _, fd := range yamlnode.Fields(root) {
		at := fmt.Sprintf("%s:%d", path, fd.K.Line)
		if fd.Problem != "" {
			return fmt.Errorf("%s: %s", at, fd.Problem)
		}
		f := fs.Lookup(fd.Key)
		if f == nil || fd.Key == "config" {
			return fmt.Errorf("%s: unknown key %s%s (the keys are agora node's flags: agora node --help)", at, yamlnode.Quote(fd.Key), spec.Suggest(fd.Key, names))
		}
		if onCommandLine[fd.Key] {
			continue
		}
		values, err := configValues(f, fd.V)
		if err != nil {
			return fmt.Errorf("%s: %s: %s", at, fd.Key, err)
		}
		for _, v := range values {
			if err := fs.Set(fd.Key, v); err != nil {
				return fmt.Errorf("%s: %s: invalid value %s: %v", at, fd.Key, yamlnode.Quote(v), err)
			}
		}
	}
	return nil
}

// configValues are the flag values a key's YAML value stands for: one
// scalar; a list of scalars for a repeatable flag; for label, a mapping
// too (k: v is k=v).
func configValues(f *flag.Flag, v *yaml.Node) ([]string, error) {
	_, repeatable := f.Value.(*multiFlag)
	switch {
	case v.Kind == yaml.ScalarNode && !yamlnode.IsNull(v):
		return []string{v.Value}, nil
	case v.Kind == yaml.SequenceNode && repeatable:
		var out []string
		for _, e := range v.Content {
			e = yamlnode.Resolve(e)
			if e.Kind != yaml.ScalarNode || yamlnode.IsNull(e) {
				return nil, fmt.Errorf("list items must be single values, got %s (line %d)", yamlnode.Describe(e), e.Line)
			}
			out = append(out, e.Value)
		}
		return out, nil
	case v.Kind == yaml.MappingNode && f.Name == "label":
		var out []string
		for _, fd := range yamlnode.Fields(v) {
			if fd.Problem != "" {
				return nil, fmt.Errorf("%s (line %d)", fd.Problem, fd.K.Line)
			}
			if fd.V.Kind != yaml.ScalarNode || yamlnode.IsNull(fd.V) {
				return nil, fmt.Errorf("label %s: want a value, got %s (line %d)", yamlnode.Quote(fd.Key), yamlnode.Describe(fd.V), fd.V.Line)
			}
			out = append(out, fd.Key+"="+fd.V.Value)
		}
		return out, nil
	case repeatable:
		return nil, fmt.Errorf("want a value or a list of values, got %s", yamlnode.Describe(v))
	default:
		return nil, fmt.Errorf("want one value, got %s", yamlnode.Describe(v))
	}
}
