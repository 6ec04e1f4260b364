package workload

import (
	"testing"

	"github.com/agora-sched/agora/testnet/sim/internal/traces"
)

// trace returns the path of a trace file, skipping the test without it.
func trace(t *testing.T, name string) string {
	t.Helper()
	return traces.File(t, name)
}
