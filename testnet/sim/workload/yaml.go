package workload

import (
	"errors"

	"go.yaml.in/yaml/v3"

	"github.com/agora-sched/agora/devices/yamlnode"
)

// decodeYAML parses data's one document; nil for an empty one.
func decodeYAML(data []byte, name string) (*yaml.Node, error) {
	root, err := yamlnode.Decode(data)
	var extra *yamlnode.ExtraDocumentError
	switch {
	case errors.As(err, &extra):
		return nil, parseErr(name, extra.Line, "", "more than one YAML document")
	case err != nil:
		return nil, parseErr(name, 0, "", "%v", err)
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

// deref follows YAML aliases to the node they name; describe names a
// node's type for messages.
var (
	deref    = yamlnode.Resolve
	describe = yamlnode.Describe
)
