// Package traces finds the shared real workload traces for tests: in
// $AGORA_TRACES, or in a shared/traces directory in the working directory
// or any directory above it. Tests skip when a trace is absent, so the
// suite passes on a clone without them.
package traces
