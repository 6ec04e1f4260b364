package workload

import (
	"math"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

func TestSyntheticDeterministic(t *testing.T) {
	opts := SyntheticOptions{Jobs: 300, Load: 0.8}
	a, b := Synthetic(42, opts), Synthetic(42, opts)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave different workloads")
	}
	c := Synthetic(43, opts)
	if reflect.DeepEqual(a.Jobs, c.Jobs) {
		t.Fatal("seeds 42 and 43 gave the same workload")
	}
	if a.Name != "synthetic:42" {
		t.Errorf("name %q", a.Name)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestSyntheticMix(t *testing.T) {
	w := Synthetic(7, SyntheticOptions{Jobs: 2000})
	kinds := map[string]int{}
	users := map[string]int{}
	var gangs, dags, shares int
	var estRatio []float64
	for _, j := range w.Jobs {
		users[j.User]++
		for _, task := range j.Spec.Tasks {
			g := task.Request.GPU
			switch task.Name {
			case "train":
				kinds["training"]++
				if g.Count < 1 || g.Count > 8 || g.Share != 0 {
					t.Fatalf("%s: training GPUs %+v", j.ID, g)
				}
				if task.Gang {
					gangs++
					if task.Replicas < 2 || task.Replicas > 4 {
						t.Fatalf("%s: gang of %d", j.ID, task.Replicas)
					}
				}
			case "serve":
				kinds["inference"]++
				if g.Share < 100 || g.Share > 500 || g.Count != 0 {
					t.Fatalf("%s: inference GPU %+v", j.ID, g)
				}
				shares++
				if rt := j.Runtimes[task.Name]; rt > 10*time.Minute {
					t.Fatalf("%s: inference runs %v", j.ID, rt)
				}
			default:
				if g.Wants() {
					t.Fatalf("%s: batch task asks for GPUs", j.ID)
				}
			}
			estRatio = append(estRatio, float64(task.Estimate)/float64(j.Runtimes[task.Name]))
		}
		if n := len(j.Spec.Tasks); n > 1 {
			kinds["batch"]++
			dags++
			if n > 5 || len(j.Spec.Tasks[n-1].After) == 0 {
				t.Fatalf("%s: DAG of %d tasks, last after %v", j.ID, n, j.Spec.Tasks[n-1].After)
			}
		}
	}
	t.Logf("kinds %v, %d gangs, users %v", kinds, gangs, users)
	for _, k := range []string{"training", "batch", "inference"} {
		if kinds[k] < 200 {
			t.Errorf("only %d %s jobs of 2000: %v", kinds[k], k, kinds)
		}
	}
	if gangs == 0 {
		t.Error("no gangs")
	}
	if len(users) != DefaultUsers || users["u0"] < 2*users["u7"] {
		t.Errorf("users %v, want %d with skewed shares", users, DefaultUsers)
	}
	sort.Float64s(estRatio)
	if med := estRatio[len(estRatio)/2]; med < 1.5 || med > 3 {
		t.Errorf("median estimate / runtime = %.2f, want 1.5–3", med)
	}
}

func TestSyntheticLoad(t *testing.T) {
	small := resource.Vector{CPU: 64000, Memory: 512 << 30}
	for range 8 {
		small.GPUs = append(small.GPUs, resource.GPU{Model: "T4", Memory: 16 << 30, Free: resource.WholeGPU})
	}
	cases := []struct {
		name     string
		capacity resource.Vector
		load     float64
	}{
		{"default cluster, load 0.5", resource.Vector{}, 0.5},
		{"default cluster, load 1", resource.Vector{}, 1},
		{"small cluster, load 0.8", small, 0.8},
		{"CPU only, load 1.5", resource.Vector{CPU: 256000, Memory: 1 << 40}, 1.5},
	}
	var spans []time.Duration
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := Synthetic(1, SyntheticOptions{Jobs: 500, Load: c.load, Capacity: c.capacity})
			capacity := c.capacity
			if capacity.CPU == 0 {
				capacity = DefaultCapacity()
			}
			cpu, mem, gpu, dom := w.OfferedLoad(capacity)
			t.Logf("offered load cpu %.3f mem %.3f gpu %.3f over %v", cpu, mem, gpu, w.Jobs[len(w.Jobs)-1].Submit)
			if math.Abs(dom-c.load) > 1e-6*c.load {
				t.Errorf("offered load %v, want %v", dom, c.load)
			}
			if len(capacity.GPUs) == 0 && gpu != 0 {
				t.Errorf("GPU load %v on a cluster without GPUs", gpu)
			}
			if c.capacity.CPU == 0 {
				spans = append(spans, w.Jobs[len(w.Jobs)-1].Submit)
			}
		})
	}
	// Same seed, same jobs: doubling the load halves the span.
	if len(spans) == 2 {
		if r := float64(spans[0]) / float64(spans[1]); math.Abs(r-2) > 1e-6 {
			t.Errorf("span at load 0.5 / span at load 1 = %v, want 2", r)
		}
	}
}

func TestSyntheticFitsNode(t *testing.T) {
	node := resource.Vector{CPU: 8000, Memory: 32 << 30, GPUs: make([]resource.GPU, 2)}
	total := resource.Vector{CPU: 80000, Memory: 320 << 30, GPUs: make([]resource.GPU, 20)}
	w := Synthetic(3, SyntheticOptions{Jobs: 500, Capacity: total, Node: node})
	for _, j := range w.Jobs {
		for _, task := range j.Spec.Tasks {
			r := task.Request
			if r.CPU > node.CPU || r.Memory > node.Memory || r.GPU.Count > 2 {
				t.Fatalf("%s/%s asks %+v, more than a node has", j.ID, task.Name, r)
			}
		}
	}
	if err := w.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestSyntheticDevices: devices=D adds jobs that each hold one unit of
// a device kind the capacity declares, of every such kind and no other;
// a capacity without devices gets none, and the default mix's
// workloads do not change for the option's existence.
func TestSyntheticDevices(t *testing.T) {
	capacity := DefaultCapacity()
	capacity.Devices = []resource.Device{{Kind: "fpga", Model: "u250", Count: 24}, {Kind: "npu", Model: "hailo8", Count: 20}}
	mix := DefaultMix
	mix.Devices = 0.2
	w := Synthetic(3, SyntheticOptions{Jobs: 2000, Load: 0.8, Capacity: capacity, Mix: mix})
	if err := w.Check(); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	devJobs := 0
	for _, j := range w.Jobs {
		for _, tk := range j.Spec.Tasks {
			if len(tk.Request.Devices) == 0 {
				continue
			}
			devJobs++
			d := tk.Request.Devices[0]
			if len(tk.Request.Devices) != 1 || d.Count != 1 || tk.Request.GPU.Wants() || j.Spec.Type != "device-"+d.Kind {
				t.Fatalf("job %s: device task %+v (type %s)", j.ID, tk.Request, j.Spec.Type)
			}
			kinds[d.Kind]++
		}
	}
	// 0.2 of 1.2: about one job in six.
	if share := float64(devJobs) / float64(len(w.Jobs)); share < 0.13 || share > 0.21 {
		t.Errorf("device jobs %d of %d (%.3f), want about 0.167", devJobs, len(w.Jobs), share)
	}
	if len(kinds) != 2 || kinds["fpga"] < devJobs/3 || kinds["npu"] < devJobs/3 {
		t.Errorf("device kinds %v", kinds)
	}
	// No declared devices: no device jobs, and the workload is the
	// default mix's.
	plain := Synthetic(3, SyntheticOptions{Jobs: 500, Load: 0.8, Mix: mix})
	def := Synthetic(3, SyntheticOptions{Jobs: 500, Load: 0.8})
	if !reflect.DeepEqual(plain.Jobs, def.Jobs) {
		t.Error("a device share without declared devices changed the workload")
	}
}
