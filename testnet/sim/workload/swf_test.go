package workload

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const swfSnippet = `; Version: 2.2
; Computer: test machine
; Information: http://example.org/
;              http://example.org/more: not a key
; MaxNodes: 64
; MaxProcs: 128
; Queue:  0  interactive
; Queue:  1  batch
;
    1      0   10   3600   16  -1 -1   16   7200  -1 1  3  1 -1 1 -1 -1 -1
    2     60    5    100    1  -1 -1   -1     -1  -1 1  4  1 -1 0 -1 -1 -1
    3     90   -1     -1    8  -1 -1    8   1800  -1 5  3  1 -1 1 -1 -1 -1
    4    120    0    50    -1  -1 -1   -1    600  -1 0  5  2 -1 1 -1 -1 -1   

    5    120    2    0      4  -1 -1    4    600  -1 1  3  1 -1 1 -1 -1 -1
    6    150    0   30.5    1  12.5 -1  2    60  -1 1  3  1 -1 1 -1 -1 -1
`

func TestReadSWF(t *testing.T) {
	w, err := ReadSWF(strings.NewReader(swfSnippet), SWFOptions{Name: "snippet"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Check(); err != nil {
		t.Fatal(err)
	}
	if w.SWF.MaxProcs != 128 || w.SWF.MaxNodes != 64 || w.SWF.Fields["Computer"] != "test machine" || w.SWF.Fields["Queue"] != "0  interactive" {
		t.Errorf("header %+v", w.SWF)
	}
	if len(w.SWF.Lines) != 9 || w.SWF.Lines[3] != ";              http://example.org/more: not a key" {
		t.Errorf("header lines %q", w.SWF.Lines)
	}
	wantSkips := map[string]int{"run time unknown": 1, "run time zero": 1, "processors unknown": 1}
	if w.Skipped != 3 || len(w.SkipReasons) != 3 {
		t.Errorf("skipped %d %v, want 3 %v", w.Skipped, w.SkipReasons, wantSkips)
	}
	for k, n := range wantSkips {
		if w.SkipReasons[k] != n {
			t.Errorf("skip reasons %v, want %v", w.SkipReasons, wantSkips)
		}
	}
	type want struct {
		id, user, typ    string
		submit, run, est time.Duration
		replicas         int
		gang             bool
	}
	wants := []want{
		{"swf-1", "3", "swf-u3-q1", 0, time.Hour, 2 * time.Hour, 16, true},
		{"swf-2", "4", "swf-u4-q0", time.Minute, 100 * time.Second, 0, 1, false}, // field 8 -1: field 5
		{"swf-6", "3", "swf-u3-q1", 150 * time.Second, 30500 * time.Millisecond, time.Minute, 2, true},
	}
	if len(w.Jobs) != len(wants) {
		t.Fatalf("%d jobs, want %d", len(w.Jobs), len(wants))
	}
	for i, c := range wants {
		j := w.Jobs[i]
		task := j.Spec.Tasks[0]
		if j.ID != c.id || j.User != c.user || j.Spec.Type != c.typ || j.Submit != c.submit || j.Runtimes["main"] != c.run ||
			task.Estimate != c.est || task.Replicas != c.replicas || task.Gang != c.gang ||
			task.Request.CPU != 1000 || task.Request.Memory != 0 || j.Spec.Priority != 5 {
			t.Errorf("job %d = %+v runtimes %v, want %+v", i, j, j.Runtimes, c)
		}
	}
}

func TestReadSWFOptions(t *testing.T) {
	cases := []struct {
		name string
		opts SWFOptions
		ids  []string
		at   []time.Duration
	}{
		{"limit", SWFOptions{Limit: 2}, []string{"swf-1", "swf-2"}, []time.Duration{0, time.Minute}},
		{"window", SWFOptions{From: 30 * time.Second, To: 150 * time.Second}, []string{"swf-2"}, []time.Duration{time.Minute}},
		{"window rebased", SWFOptions{From: 30 * time.Second, Rebase: true}, []string{"swf-2", "swf-6"}, []time.Duration{0, 90 * time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := ReadSWF(strings.NewReader(swfSnippet), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			var at []time.Duration
			for _, j := range w.Jobs {
				ids, at = append(ids, j.ID), append(at, j.Submit)
			}
			if strings.Join(ids, " ") != strings.Join(c.ids, " ") || len(at) != len(c.at) {
				t.Fatalf("jobs %v at %v, want %v at %v", ids, at, c.ids, c.at)
			}
			for i := range at {
				if at[i] != c.at[i] {
					t.Errorf("jobs %v at %v, want %v at %v", ids, at, c.ids, c.at)
				}
			}
		})
	}
}

func TestReadSWFErrors(t *testing.T) {
	good := "    1      0   10   3600   16  -1 -1   16   7200  -1 1  3  1 -1 1 -1 -1 -1\n"
	cases := []struct {
		name, input, want string
	}{
		{"short line", good + "1 2 3\n", "line 2: 3 fields, want 18"},
		{"not a number", "; c\n" + strings.Replace(good, "3600", "1h", 1), `line 2: field 4 (run time): "1h" is not a number`},
		{"fractional processors", strings.Replace(good, "  16   7200", " 1.5   7200", 1), "line 1: field 8 (requested processors): 1.5 is not a whole number"},
		{"duplicate job", good + good, `job "swf-1": duplicate ID`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadSWF(strings.NewReader(c.input), SWFOptions{Name: "bad.swf"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			var pe *ParseError
			if strings.Contains(c.want, "line") && (!errors.As(err, &pe) || pe.Source != "bad.swf") {
				t.Errorf("error %#v is not a *ParseError naming the source", err)
			}
		})
	}
}

func TestOpenSWFGzip(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(swfSnippet))
	zw.Close()
	// The name does not say gzip: the magic bytes do.
	for name, data := range map[string][]byte{"a.swf": buf.Bytes(), "b.swf": []byte(swfSnippet)} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := OpenSWF(p, SWFOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if w.Name != name || len(w.Jobs) != 3 {
			t.Errorf("%s: name %q, %d jobs, want 3", name, w.Name, len(w.Jobs))
		}
	}
}
