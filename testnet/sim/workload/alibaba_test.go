package workload

import (
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

func TestReadAlibabaPods(t *testing.T) {
	// Columns in another order than the trace's, and an extra one.
	const pods = `qos,name,scheduled_time,creation_time,deletion_time,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,extra
LS,p-whole,10,5,110,12000,16384,2,1000,,x
BE,p-share,20,20,80,4000,1024,1,460,V100M16,x
BE,p-cpu,0,0,30,8000,2048,0,0,,x
LS,p-pending,,40,50,1000,1024,1,1000,,x
LS,p-alive,30,30,,1000,1024,1,1000,,x
Burstable,p-zero,50,50,50,1000,1024,1,1000,,x
BE,p-anymodel,60,60,70,1000,1024,1,1000,V100M16|V100M32,x
`
	w, err := ReadAlibabaPods(strings.NewReader(pods))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Check(); err != nil {
		t.Fatal(err)
	}
	if w.Skipped != 3 || w.SkipReasons["never scheduled"] != 1 || w.SkipReasons["no deletion time"] != 1 || w.SkipReasons["runtime <= 0"] != 1 {
		t.Errorf("skipped %d %v", w.Skipped, w.SkipReasons)
	}
	type want struct {
		id, user, typ string
		submit, run   time.Duration
		req           resource.Request
	}
	wants := []want{
		{"p-cpu", "BE", "alibaba-BE", 0, 30 * time.Second, resource.Request{CPU: 8000, Memory: 2048 << 20}},
		{"p-whole", "LS", "alibaba-LS", 5 * time.Second, 100 * time.Second,
			resource.Request{CPU: 12000, Memory: 16 << 30, GPU: resource.GPURequest{Count: 2}}},
		{"p-share", "BE", "alibaba-BE", 20 * time.Second, 60 * time.Second,
			resource.Request{CPU: 4000, Memory: 1 << 30, GPU: resource.GPURequest{Share: 460, Model: "V100M16"}}},
		{"p-anymodel", "BE", "alibaba-BE", 60 * time.Second, 10 * time.Second,
			resource.Request{CPU: 1000, Memory: 1 << 30, GPU: resource.GPURequest{Count: 1}}},
	}
	if len(w.Jobs) != len(wants) {
		t.Fatalf("%d jobs, want %d", len(w.Jobs), len(wants))
	}
	for i, c := range wants {
		j := w.Jobs[i]
		r := j.Spec.Tasks[0].Request
		if j.ID != c.id || j.User != c.user || j.Spec.Type != c.typ || j.Submit != c.submit || j.Runtimes["main"] != c.run ||
			r.CPU != c.req.CPU || r.Memory != c.req.Memory || r.GPU != c.req.GPU || j.Spec.Tasks[0].Estimate != 0 {
			t.Errorf("job %d = %+v, want %+v", i, j, c)
		}
	}
}

func TestReadAlibabaErrors(t *testing.T) {
	cases := []struct{ name, input, want string }{
		{"empty", "", "empty file"},
		{"missing column", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n", "no column scheduled_time"},
		{"bad number", "cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n1000,1k,0,0,0,1,0\n",
			`line 2: memory_mib: "1k" is not a whole number`},
		{"negative", "cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\n-5,1,0,0,0,1,0\n",
			"line 2: cpu_milli: negative value -5"},
	}
	for _, c := range cases {
		if _, err := ReadAlibabaPods(strings.NewReader(c.input)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestReadAlibabaNodes(t *testing.T) {
	const nodes = `sn,model,gpu,memory_mib,cpu_milli
n0,,0,262144,32000
n1,V100M32,8,786432,96000
n2,,0,262144,32000
n3,G2,8,393216,96000
n4,V100M32,8,786432,96000
`
	classes, err := ReadAlibabaNodes(strings.NewReader(nodes))
	if err != nil {
		t.Fatal(err)
	}
	if len(classes) != 3 {
		t.Fatalf("%d classes, want 3: %+v", len(classes), classes)
	}
	counts := []int{2, 2, 1}
	for i, c := range classes {
		if c.Count != counts[i] {
			t.Errorf("class %d count %d, want %d", i, c.Count, counts[i])
		}
	}
	v := classes[1].Resources
	if v.CPU != 96000 || v.Memory != 768<<30 || len(v.GPUs) != 8 || v.GPUs[7].Index != 7 ||
		v.GPUs[0].Model != "V100M32" || v.GPUs[0].Memory != 32<<30 || v.GPUs[0].Free != resource.WholeGPU {
		t.Errorf("V100M32 class %+v", v)
	}
	if g := classes[2].Resources.GPUs[0]; g.Model != "G2" || g.Memory != 0 {
		t.Errorf("G2 GPU %+v, want no memory", g)
	}
	if classes[0].Resources.GPUs != nil {
		t.Errorf("CPU node has GPUs %+v", classes[0].Resources.GPUs)
	}
	total := Total(classes)
	if total.CPU != 352000 || len(total.GPUs) != 24 || total.GPUs[23].Index != 23 {
		t.Errorf("total %s with %d GPUs", total, len(total.GPUs))
	}
}
