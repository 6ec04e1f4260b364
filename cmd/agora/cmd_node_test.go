package main

import (
	"io"
	"slices"
	"testing"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/node"
)

// TestNodeFlagsMarketDefaults: `agora node` with its default flags runs
// market.Defaults(), the configuration the simulator's nodes run
// (testnet/sim TestSimRunsNodeConfig), but for what is the node's own.
func TestNodeFlagsMarketDefaults(t *testing.T) {
	cfg, code, ok := nodeConfig([]string{"--data", t.TempDir()}, io.Discard, io.Discard)
	if !ok {
		t.Fatalf("default flags refused: exit %d", code)
	}
	if d := market.ConfigDiff(cfg.Market.WithDefaults(), market.Defaults()); len(d) > 0 {
		t.Fatalf("the node's market configuration differs from market.Defaults() in %v", d)
	}
	// What the node sets from its own configuration (node.marketConfig).
	if def := market.Defaults(); cfg.AdvertInterval != def.AdvertInterval || node.DefaultAdvertInterval != def.AdvertInterval {
		t.Fatalf("advert interval %v (default %v), the market's %v", cfg.AdvertInterval, node.DefaultAdvertInterval, def.AdvertInterval)
	}
	// And a flag that is set reaches it.
	cfg, _, ok = nodeConfig([]string{"--data", t.TempDir(), "--d", "5"}, io.Discard, io.Discard)
	if d := market.ConfigDiff(cfg.Market.WithDefaults(), market.Defaults()); !ok || !slices.Equal(d, []string{"D"}) {
		t.Fatalf("--d 5: differences %v, want [D]", d)
	}
}
