package spec

import (
	"fmt"

	"github.com/agora-sched/agora/devices/yamlnode"
)

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
	plain := key != "" && len(key) <= yamlnode.MaxQuoted
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
	if len(s) <= yamlnode.MaxQuoted {
		return s
	}
	return yamlnode.Quote(s)
}

// quote renders a user's string for an error message (yamlnode.Quote).
func quote(s string) string { return yamlnode.Quote(s) }
