package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	cases := []struct {
		in   string
		want Source
	}{
		{"synthetic:42", Source{Kind: KindSynthetic, Seed: 42}},
		{"synthetic:-3,jobs=500,load=0.9", Source{Kind: KindSynthetic, Seed: -3, Jobs: 500, Load: 0.9}},
		{"synthetic:1, users=4 ,load=2", Source{Kind: KindSynthetic, Seed: 1, Users: 4, Load: 2}},
		{"synthetic:7,devices=0.25", Source{Kind: KindSynthetic, Seed: 7, Devices: 0.25}},
		{"traces/SDSC-SP2.swf.gz", Source{Kind: KindSWF, Path: "traces/SDSC-SP2.swf.gz"}},
		{"a.SWF", Source{Kind: KindSWF, Path: "a.SWF"}},
		{"t/KTH.swf,jobs=1024,from=30d,to=30d12h", Source{Kind: KindSWF, Path: "t/KTH.swf", Jobs: 1024, From: 30 * 24 * time.Hour, To: 30*24*time.Hour + 12*time.Hour}},
		{"pods.csv", Source{Kind: KindAlibaba, Path: "pods.csv"}},
		{"odd,name.csv", Source{Kind: KindAlibaba, Path: "odd,name.csv"}},
		{"jobs.yaml", Source{Kind: KindSpecs, Path: "jobs.yaml"}},
		{"jobs.json,jobs=3", Source{Kind: KindSpecs, Path: "jobs.json", Jobs: 3}},
	}
	for _, c := range cases {
		got, err := ParseSpec(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSpec(%q) = %+v, %v, want %+v", c.in, got, err, c.want)
			continue
		}
		// String renders what ParseSpec reads back.
		if again, err := ParseSpec(got.String()); err != nil || again != got {
			t.Errorf("ParseSpec(%q) = %+v, %v, want %+v", got.String(), again, err, got)
		}
	}
}

func TestParseSpecErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "empty workload"},
		{"synthetic:", `synthetic seed "" is not a whole number`},
		{"synthetic:x", `synthetic seed "x"`},
		{"synthetic:1,jobs=0", "option jobs=0"},
		{"synthetic:1,load=-1", "option load=-1"},
		{"synthetic:1,load=1,load=2", "option load: given twice"},
		{"synthetic:1,speed=3", "option speed=3: unknown option (want jobs, load, users or devices)"},
		{"synthetic:1,devices=0", `option devices=0: "0" is not a device-job share in (0, 10]`},
		{"synthetic:1,devices=lots", `"lots" is not a device-job share`},
		{"synthetic:1,jobs", `option "jobs": want key=value`},
		{"trace.txt", `"trace.txt": unknown kind of file`},
		{"a.swf,from=yesterday", `option from=yesterday: "yesterday" is not a duration`},
		{"a.swf,from=2d,to=1d", "to=24h0m0s is not after from=48h0m0s"},
		{"a.csv,load=1", "option load=1: unknown option (want jobs, from or to)"},
	}
	for _, c := range cases {
		if _, err := ParseSpec(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSpec(%q) error %v, want one containing %q", c.in, err, c.want)
		}
	}
}

func TestSourceOpen(t *testing.T) {
	dir := t.TempDir()
	swf := filepath.Join(dir, "log.swf")
	if err := os.WriteFile(swf, []byte(swfSnippet), 0o644); err != nil {
		t.Fatal(err)
	}
	specs := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(specs, []byte("- name: a\n  submit: 1m\n  tasks: [{name: m, command: x, estimate: 1m}]\n- name: b\n  submit: 2m\n  tasks: [{name: m, command: x, estimate: 1m}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		spec  string
		jobs  int
		first time.Duration
	}{
		{"synthetic:5,jobs=20", 20, 0},
		{swf, 3, 0},
		{swf + ",from=1m", 2, 0}, // rebased
		{swf + ",jobs=1", 1, 0},
		{specs, 2, time.Minute},
		{specs + ",from=90s", 1, 0},
	}
	for _, c := range cases {
		src, err := ParseSpec(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		w, err := src.Open(DefaultCapacity(), DefaultCapacity())
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		if len(w.Jobs) != c.jobs || w.Jobs[0].Submit != c.first {
			t.Errorf("%s: %d jobs, first at %v, want %d at %v", c.spec, len(w.Jobs), w.Jobs[0].Submit, c.jobs, c.first)
		}
	}
	if _, err := (Source{Kind: KindSWF, Path: filepath.Join(dir, "missing.swf")}).Open(DefaultCapacity(), DefaultCapacity()); err == nil {
		t.Error("opened a missing file")
	}
}
