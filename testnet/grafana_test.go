package testnet

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestGrafanaDashboard (issue 26, done-when 6): every metric the Grafana
// dashboard in docs/grafana references is on a live node's /metrics, and
// the dashboard is the JSON Grafana imports (panels with targets, the
// datasource and instance variables).
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("../docs/grafana/agora-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	net := New(t, 2, Options{})
	net.WaitConverged(20 * time.Second)
	exposed := map[string]bool{}
	for sample := range scrape(t, net.Node(0)) {
		name, _, _ := strings.Cut(sample, "{")
		exposed[name] = true
	}
	metric := regexp.MustCompile(`agora_[a-z0-9_]+`)
	used := map[string]bool{}
	check := func(where, expr string) {
		for _, m := range metric.FindAllString(expr, -1) {
			used[m] = true
			if !exposed[m] {
				t.Errorf("%s uses %s, which /metrics does not have", where, m)
			}
		}
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 || p.Type == "" {
			t.Errorf("panel %q has no type or no target", p.Title)
		}
		for _, tg := range p.Targets {
			check("panel "+p.Title, tg.Expr)
		}
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		check("variable "+v.Name, v.Definition)
	}
	if !vars["datasource"] || !vars["instance"] {
		t.Errorf("variables %v, want datasource and instance", vars)
	}
	if len(used) < 10 {
		t.Fatalf("the dashboard references %d metrics: %v", len(used), used)
	}
	var unused []string
	for m := range exposed {
		if strings.HasPrefix(m, "agora_") && !used[m] && !used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")+"_bucket"] {
			unused = append(unused, m)
		}
	}
	sort.Strings(unused)
	t.Logf("%d panels, %d metrics referenced, all exposed; agora metrics not on the dashboard: %v", len(d.Panels), len(used), unused)
}
