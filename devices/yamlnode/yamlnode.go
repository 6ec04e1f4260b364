package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// SyntaxError is a document the YAML library could not parse.
type SyntaxError struct {
	Msg string // the library's complaint, on one line
}

func (e *SyntaxError) Error() string { return "invalid YAML: " + e.Msg }

// ExtraDocumentError is data holding a second document after the first.
type ExtraDocumentError struct {
	Line int // where the second document starts
}

func (e *ExtraDocumentError) Error() string {
	return fmt.Sprintf("more than one YAML document (line %d)", e.Line)
}

// Decode parses data, which must hold at most one YAML document, and
// returns that document's root node with aliases resolved, or nil when
// the document is empty or null. It fails with a *SyntaxError or an
// *ExtraDocumentError, never with a panic of the library's.
func Decode(data []byte) (root *yaml.Node, err error) {
	defer func() {
		// yaml.v3 reports errors by panicking internally; a panic that
		// escapes it is a bug there, and must not take a node down.
		if r := recover(); r != nil {
			root, err = nil, &SyntaxError{Msg: oneLine(fmt.Sprint(r))}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, &SyntaxError{Msg: oneLine(strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &ExtraDocumentError{Line: extra.Line}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || IsNull(doc.Content[0]) {
		return nil, nil
	}
	return Resolve(doc.Content[0]), nil
}

// maxAliasHops bounds how many aliases Resolve follows.
const maxAliasHops = 8

// Resolve follows aliases to the node they name. A dangling or too long
// chain of aliases, and a nil node, read as null.
func Resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxAliasHops; i++ {
		n = n.Alias
	}
	if n == nil || n.Kind == yaml.AliasNode {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	return n
}

// IsNull reports whether n is YAML null (~, null or nothing).
func IsNull(n *yaml.Node) bool {
	n = Resolve(n)
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// Describe names the kind of value n holds, for an error message's
// "got …": "a mapping", "a list", "null", `the string "x"`, "the number
// 5", "the boolean true".
func Describe(n *yaml.Node) string {
	n = Resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.DocumentNode:
		return "a document"
	}
	switch tag := n.ShortTag(); tag {
	case "!!null":
		return "null"
	case "!!str":
		return "the string " + Quote(n.Value)
	case "!!bool":
		return "the boolean " + short(n.Value)
	case "!!int", "!!float":
		return "the number " + short(n.Value)
	case "!!timestamp":
		return "the timestamp " + Quote(n.Value)
	default:
		return Quote(tag) + " value " + Quote(n.Value)
	}
}

// MaxQuoted is how much of a user's string an error message repeats.
const MaxQuoted = 48

// Quote renders a user's string for an error message: Go-quoted, so it is
// one line, and cut after MaxQuoted bytes.
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// short shortens a plain token (a number, a boolean) for a message.
func short(s string) string {
	if len(s) <= MaxQuoted {
		return s
	}
	return Quote(s)
}

// Field is one key of a mapping and its value, aliases resolved.
type Field struct {
	Key     string     // the key's text
	K, V    *yaml.Node // the key and value nodes
	Problem string     // why a strict reader refuses the key; "" when it does not
}

// Fields lists the keys of mapping m in document order. A key that is not
// a string (a mapping, a list, null), a merge key (<<) and a key repeated
// after its first appearance come with a Problem saying so; the caller
// decides whether to stop at the first or report them all. m must be a
// mapping (see Resolve); anything else has no fields.
func Fields(m *yaml.Node) []Field {
	m = Resolve(m)
	if m.Kind != yaml.MappingNode {
		return nil
	}
	out := make([]Field, 0, len(m.Content)/2)
	first := make(map[string]int, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := Resolve(m.Content[i]), Resolve(m.Content[i+1])
		f := Field{Key: k.Value, K: k, V: v}
		switch line, dup := first[k.Value]; {
		case k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null":
			f.Problem = "keys must be strings, got " + Describe(k)
		case k.ShortTag() == "!!merge":
			f.Problem = "merge keys (<<) are not supported; use an alias (*name) for the whole value"
		case dup:
			f.Problem = fmt.Sprintf("duplicate key (first at line %d)", line)
		default:
			first[k.Value] = k.Line
		}
		out = append(out, f)
	}
	return out
}

// LineOf follows a field path such as `tasks[1].resources.gpu` or
// `env["A B"]` from root and returns the line of the key or element it
// names or, where the path leaves the document (a field left out), the
// line of the last node it reached. The empty path names no line: 0.
func LineOf(root *yaml.Node, path string) int {
	n, line := root, 0
	for path != "" {
		n = Resolve(n)
		var key string
		idx := -1
		switch {
		case strings.HasPrefix(path, "[\""):
			q, err := strconv.QuotedPrefix(path[1:])
			if err != nil {
				return n.Line
			}
			key, _ = strconv.Unquote(q)
			path = strings.TrimPrefix(path[1+len(q):], "]")
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			i, err := strconv.Atoi(path[1:max(end, 1)])
			if end < 0 || err != nil {
				return n.Line
			}
			idx, path = i, path[end+1:]
		default:
			end := strings.IndexAny(path[1:], ".[") + 1
			if end == 0 {
				end = len(path)
			}
			key, path = strings.TrimPrefix(path[:end], "."), path[end:]
		}
		var next *yaml.Node
		switch {
		case idx >= 0 && n.Kind == yaml.SequenceNode && idx < len(n.Content):
			next, line = n.Content[idx], n.Content[idx].Line
		case idx < 0 && n.Kind == yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := Resolve(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
					next, line = n.Content[i+1], k.Line
					break
				}
			}
		}
		if next == nil {
			return n.Line
		}
		n = next
	}
	return line
}

// oneLine joins a multi-line message from the YAML library into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
