package node

import (
	"maps"
	"testing"

	"github.com/agora-sched/agora/devices/resource"
)

// TestCDINames: GPUs go through CDI only when the host's specs name
// every one, by UUID first, else by index.
func TestCDINames(t *testing.T) {
	gpus := []resource.GPU{{Index: 0, UUID: "GPU-a"}, {Index: 1, UUID: "GPU-b"}}
	set := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	tests := []struct {
		name  string
		names map[string]bool
		want  map[int]string
	}{
		{"by UUID", set("GPU-a", "GPU-b", "0", "1", "all"), map[int]string{0: "GPU-a", 1: "GPU-b"}},
		{"by index", set("0", "1"), map[int]string{0: "0", 1: "1"}},
		{"mixed", set("GPU-a", "1"), map[int]string{0: "GPU-a", 1: "1"}},
		{"one missing", set("GPU-a"), nil},
		{"no specs", nil, nil},
	}
	for _, tc := range tests {
		if got := cdiNames(gpus, tc.names); !maps.Equal(got, tc.want) {
			t.Errorf("%s: cdiNames = %v, want %v", tc.name, got, tc.want)
		}
	}
}
