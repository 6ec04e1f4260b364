package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestFairShareSection: the fair-share section replays a log's users
// under both schedulers and judges the nodes against the central
// baseline (here KTH's first 150 jobs, from docs/examples, standing in
// for the whole log under its name).
func TestFairShareSection(t *testing.T) {
	traces := t.TempDir()
	src, err := filepath.Abs("../../docs/examples/kth-sp2-first700.swf.gz")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(src, filepath.Join(traces, "KTH-SP2-1996-2.1-cln.swf.gz")); err != nil {
		t.Fatal(err)
	}
	r := &report{o: options{traces: traces, auctionSWFJobs: 150, seed: 1}}
	r.fairShare()
	got := r.b.String()
	for _, re := range []string{
		`\| KTH \| easy-fairshare \(central\) \| \d+ \| [\d.]+ \| 0\.\d{3} \| \d+ \| — \|`,
		`\| KTH \| auction --users \(nodes\) \| \d+ \| [\d.]+ \| 0\.\d{3} \| \d+ \| \d+ \|`,
		`KTH: light users' wait [\d.]+× the central's \((met|missed), want ≤ 1\.1\), Jain [\d.]+× \((met|missed), want ≥ 0\.9\), \d+ usage bytes per node per minute\.`,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("the section lacks %s:\n%s", re, got)
		}
	}
}
