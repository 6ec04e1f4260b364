// Command agora is Agora's one binary: `agora node` runs a node, the other
// subcommands are clients of a node's local HTTP API.
package main
