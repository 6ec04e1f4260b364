package workload

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// decodeYAML parses data's one document; nil for an empty one.
func decodeYAML(data []byte, name string) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, parseErr(name, 0, "", "invalid YAML: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, parseErr(name, 0, "", "invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, parseErr(name, extra.Line, "", "more than one YAML document")
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root = deref(doc.Content[0])
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, nil
	}
	return root, nil
}

// expand copies n with every alias replaced by what it names, spending
// one of budget per node, so that a subtree can be marshalled alone.
func expand(n *yaml.Node, budget *int) (*yaml.Node, error) {
	n = deref(n)
	if *budget--; *budget < 0 {
		return nil, errors.New("too large with its aliases expanded")
	}
	c := *n
	c.Anchor = ""
	c.Content = nil
	for _, k := range n.Content {
		e, err := expand(k, budget)
		if err != nil {
			return nil, err
		}
		c.Content = append(c.Content, e)
	}
	return &c, nil
}

// deref follows YAML aliases to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// describe names a YAML node's type for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!bool":
			return "a boolean (" + n.Value + ")"
		case "!!int", "!!float":
			return "a number (" + n.Value + ")"
		}
		return strconv.Quote(n.Value)
	}
	return "an unexpected YAML node"
}
