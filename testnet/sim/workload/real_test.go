package workload

import (
	"testing"
)

func TestRealSWF(t *testing.T) {
	cases := []struct {
		file               string
		lines, skipped     int // the README's figures
		maxProcs, maxNodes int
	}{
		{"SDSC-SP2-1998-4.2-cln.swf.gz", 59715, 5671, 128, 128},
		{"KTH-SP2-1996-2.1-cln.swf.gz", 28476, 0, 100, 100},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			w, err := OpenSWF(trace(t, c.file), SWFOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d jobs, %d skipped %v, %d task replicas, MaxProcs %d", w.Name, len(w.Jobs), w.Skipped, w.SkipReasons, w.Tasks(), w.SWF.MaxProcs)
			if got := len(w.Jobs) + w.Skipped; got != c.lines {
				t.Errorf("jobs + skipped = %d, want the README's %d lines", got, c.lines)
			}
			if d := w.Skipped - c.skipped; d < 0 || d > 20 {
				t.Errorf("skipped %d, want about the README's %d cancelled jobs", w.Skipped, c.skipped)
			}
			if w.SWF.MaxProcs != c.maxProcs || w.SWF.MaxNodes != c.maxNodes {
				t.Errorf("MaxProcs, MaxNodes = %d, %d, want %d, %d", w.SWF.MaxProcs, w.SWF.MaxNodes, c.maxProcs, c.maxNodes)
			}
			for i, j := range w.Jobs {
				if n := j.Spec.Tasks[0].Replicas; n > c.maxProcs {
					t.Fatalf("job %s asks for %d processors, more than the machine's %d", j.ID, n, c.maxProcs)
				}
				if i%97 == 0 {
					if err := j.Spec.Validate(); err != nil {
						t.Fatalf("job %s: %v", j.ID, err)
					}
				}
			}
		})
	}
}

func TestRealAlibaba(t *testing.T) {
	pods, err := OpenAlibabaPods(trace(t, "alibaba-gpu-v2023-openb_pod_list_default.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var share, whole, cpuOnly, gpus int
	for _, j := range pods.Jobs {
		g := j.Spec.Tasks[0].Request.GPU
		switch {
		case g.Share > 0:
			share++
		case g.Count > 0:
			whole++
			gpus += g.Count
		default:
			cpuOnly++
		}
	}
	t.Logf("pods: %d jobs (%d GPU share, %d whole GPU asking %d GPUs, %d CPU only), %d skipped %v",
		len(pods.Jobs), share, whole, gpus, cpuOnly, pods.Skipped, pods.SkipReasons)
	if got := len(pods.Jobs) + pods.Skipped; got != 8152 {
		t.Errorf("pods read = %d, want the README's 8152", got)
	}
	if err := pods.Check(); err != nil {
		t.Fatal(err)
	}
	if pods.SkipReasons["never scheduled"] != pods.Skipped {
		t.Errorf("skip reasons %v, want only pods never scheduled (the trace's Pending pods)", pods.SkipReasons)
	}

	classes, err := OpenAlibabaNodes(trace(t, "alibaba-gpu-v2023-openb_node_list_all_node.csv"))
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Nodes: classes}
	total := c.Total()
	models := map[string]int{}
	for _, g := range total.GPUs {
		models[g.Model]++
	}
	t.Logf("nodes: %d in %d classes, %s, GPUs by model %v", c.Size(), len(classes), total, models)
	if c.Size() != 1523 {
		t.Errorf("nodes = %d, want 1523", c.Size())
	}
	if len(total.GPUs) != 6212 {
		t.Errorf("GPUs = %d, want 6212", len(total.GPUs))
	}
}
