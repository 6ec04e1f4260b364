// Package yamlnode holds what Agora's strict YAML readers share when they
// walk a document's node tree instead of decoding it into structs: reading
// exactly one document, following aliases, naming a value's type in an
// error message, listing a mapping's keys with the problems a strict
// reader refuses (non-string, merge and repeated keys), and finding the
// line of a field path.
//
// Its users are the resources file (package devices), job specs
// (market/spec) and the simulator's cluster and job-list files
// (testnet/sim/workload). It lives under devices, the lowest of the three
// layers. It does no I/O and imports nothing of this module.
package yamlnode
