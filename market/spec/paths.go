package spec

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "gopkg.in/yaml.v3"
)

// maxQuoted is how much of a user's string an error message repeats.
const maxQuoted = 48

// field is the path of a named field beneath parent.
func field(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// index is the path of a list element beneath parent.
func index(parent string, i int) string {
	return fmt.Sprintf("%s[%d]", parent, i)
}

// keyPath is the path of a map key beneath parent: parent.key when the key
// is a plain word, parent["key"] otherwise, so a path is always one line.
func keyPath(parent, key string) string {
	plain := key != "" && len(key) <= maxQuoted
	for i := 0; i < len(key) && plain; i++ {
		c := key[i]
		plain = c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if plain {
		return field(parent, key)
	}
	return parent + "[" + quote(key) + "]"
}

// short shortens a plain token (a number, a boolean) for a message.
func short(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return quote(s)
}

// quote renders a user's string for an error message: Go-quoted, so it is
// one line, and shortened when long.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// lineOf follows path from the spec's root node and returns the line of
// the key or element it names or, where the path leaves the spec (a field
// left out), the line of the last node it reached.
func lineOf(root *yaml.Node, path string) int {
	n, line := root, 0
	for path != "" {
		n = resolve(n)
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
		next := (*yaml.Node)(nil)
		switch {
		case idx >= 0 && n.Kind == yaml.SequenceNode && idx < len(n.Content):
			next, line = n.Content[idx], n.Content[idx].Line
		case idx < 0 && n.Kind == yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := resolve(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
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
