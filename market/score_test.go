package market

import (
	"strings"
	"testing"
)

// constScorer scores every bid the same; a custom scorer for the tests.
type constScorer struct{ name string }

func (s constScorer) Name() string             { return s.name }
func (s constScorer) Score(ScoreInput) float64 { return 0.5 }

func TestScorerRegistry(t *testing.T) {
	if _, err := NewRegistry(Weighted{}, constScorer{"weighted"}); err == nil || !strings.Contains(err.Error(), `"weighted" registered twice`) {
		t.Fatalf("duplicate name: err %v", err)
	}
	reg, err := NewRegistry(constScorer{"flat"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Self: "n0", Scorer: "flat", Scorers: reg})
	if err != nil {
		t.Fatalf("a scorer of the config's own registry: %v", err)
	}
	if got := m.Config().Scorer; got != "flat" {
		t.Fatalf("scorer %q", got)
	}
	if _, err := New(Config{Self: "n0", Scorer: "weighted", Scorers: reg}); err == nil || !strings.Contains(err.Error(), `unknown scorer "weighted" (have [flat])`) {
		t.Fatalf("a scorer the registry lacks: err %v", err)
	}
	if _, err := New(Config{Self: "n0", Scorer: "flat"}); err == nil {
		t.Fatal("a custom scorer without its registry was accepted")
	}
	if got := strings.Join(DefaultScorers().Names(), ","); got != "best-fit,earliest-finish,least-loaded,weighted" {
		t.Fatalf("default scorers %s", got)
	}
}
