package devices

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

func statFile(cpuLine string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(cpuLine + "\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 12345\nctxt 99\n")}
}

func TestSamplerCPUDeltas(t *testing.T) {
	fsys := fstest.MapFS{"proc/meminfo": &fstest.MapFile{Data: []byte(meminfo16G)}}
	s := NewSampler(SamplerOptions{FS: fsys})
	steps := []struct {
		line string
		busy float64
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{"cpu  100 0 100 700 100 0 0 0 50 0", 0.2},   // since boot: 200 busy of 1000
		{"cpu  150 0 150 750 150 0 0 0 90 0", 0.5},   // +100 busy, +100 idle/iowait; guest not counted
		{"cpu  150 0 150 750 150 0 0 0 90 0", 0.5},   // no tick: repeat
		{"cpu  150 10 150 750 150 20 30 40 90 0", 1}, // only nice, irq, softirq and steal grew
		{"cpu  150 10 150 850 150 20 30 40 90 0", 0}, // only idle grew
		{"cpu  10 0 10 10 0 0 0 0 0 0", 0},           // counters went backwards
		{"cpu  40 0 10 40 0 0 0 0 0 0", 0.5},         // afresh from the reset
		{"cpu  40 0 10 40", 0.5},                     // old kernel, four fields: no tick, repeat
	}
	for i, st := range steps {
		fsys["proc/stat"] = statFile(st.line)
		u, err := s.Sample()
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if u.CPUBusy != st.busy {
			t.Errorf("step %d (%s): CPUBusy %v, want %v", i, st.line, u.CPUBusy, st.busy)
		}
	}
}

func TestSamplerMemoryAndGPUs(t *testing.T) {
	fsys := fstest.MapFS{
		"proc/meminfo": &fstest.MapFile{Data: []byte(meminfo16G)},
		"proc/stat":    statFile("cpu 1 1 1 1 1 1 1 1 1 1"),
	}
	u, err := NewSampler(SamplerOptions{FS: fsys}).Sample()
	if err != nil {
		t.Fatal(err)
	}
	if u.MemAvailable != 8<<30 || u.MemUsed != 8<<30 {
		t.Errorf("memory: used %d available %d", u.MemUsed, u.MemAvailable)
	}
	b, _ := json.Marshal(u)
	if !strings.Contains(string(b), `"gpus":[]`) {
		t.Errorf("no GPUs should marshal as an empty list: %s", b)
	}

	gpus := []GPUUsage{{Index: 0, UUID: "GPU-0", Utilization: 0.25, MemUsed: 1 << 30, MemTotal: 16 << 30}}
	u, err = NewSampler(SamplerOptions{FS: fsys, GPUs: func() []GPUUsage { return gpus }}).Sample()
	if err != nil || len(u.GPUs) != 1 || u.GPUs[0] != gpus[0] {
		t.Errorf("with GPUs: %+v, %v", u, err)
	}
	u, err = NewSampler(SamplerOptions{FS: fsys, GPUs: func() []GPUUsage { return nil }}).Sample()
	if err != nil || u.GPUs == nil {
		t.Errorf("GPUs func returning nil: %+v, %v", u, err)
	}
}

func TestSamplerErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		err   string
	}{
		{"no stat", map[string]string{"proc/meminfo": meminfo16G}, "devices: sample: open proc/stat: file does not exist"},
		{"no meminfo", map[string]string{"proc/stat": "cpu 1 2 3 4\n"}, "devices: sample: open proc/meminfo: file does not exist"},
		{"no cpu line", map[string]string{"proc/stat": "cpu0 1 2 3 4\n", "proc/meminfo": meminfo16G}, "devices: sample: proc/stat: no cpu line"},
		{"short cpu line", map[string]string{"proc/stat": "cpu 1 2 3\n", "proc/meminfo": meminfo16G}, `devices: sample: proc/stat: short cpu line "cpu 1 2 3"`},
		{"bad number", map[string]string{"proc/stat": "cpu 1 2 x 4\n", "proc/meminfo": meminfo16G}, `devices: sample: proc/stat: bad cpu field "x"`},
	}
	for _, tt := range tests {
		_, err := NewSampler(SamplerOptions{FS: fakeFS(tt.files)}).Sample()
		if got := errString(err); got != tt.err {
			t.Errorf("%s: error %q, want %q", tt.name, got, tt.err)
		}
	}
}

func TestSamplerRealMachine(t *testing.T) {
	requireLinux(t)
	s := NewSampler(SamplerOptions{GPUs: NewGPUMonitor().Usage})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				u, err := s.Sample()
				if err != nil {
					t.Error(err)
					return
				}
				if u.CPUBusy < 0 || u.CPUBusy > 1 || u.MemAvailable <= 0 || u.MemUsed < 0 || u.GPUs == nil {
					t.Errorf("implausible usage %+v", u)
				}
			}
		}()
	}
	wg.Wait()
}
