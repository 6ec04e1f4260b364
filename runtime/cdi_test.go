package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindCDIDevices(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	files := map[string]string{
		filepath.Join(a, "nvidia.yaml"):   "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n  - name: \"0\"\n  - name: GPU-8f6a\n  - name: all\n",
		filepath.Join(a, "other.json"):    `{"cdiVersion":"0.5.0","kind":"vendor.example/fpga","devices":[{"name":"1"}]}`,
		filepath.Join(b, "more.json"):     `{"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[{"name":"1"}]}`,
		filepath.Join(b, "broken.yaml"):   "kind: [nvidia.com/gpu\n",
		filepath.Join(b, "notes.txt"):     "kind: nvidia.com/gpu\ndevices: [{name: 9}]\n",
		filepath.Join(b, "sub", "x.yaml"): "",
	}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names, err := FindCDIDevices([]string{a, b, filepath.Join(a, "missing")}, NvidiaCDIKind)
	if err == nil || !strings.Contains(err.Error(), "broken.yaml") {
		t.Errorf("error %v, want one naming broken.yaml", err)
	}
	for _, want := range []string{"0", "1", "GPU-8f6a", "all"} {
		if !names[want] {
			t.Errorf("device %q not found in %v", want, names)
		}
	}
	if len(names) != 4 {
		t.Errorf("found %v, want 4 names", names)
	}
}

func TestCDIDevices(t *testing.T) {
	c := &ContainerRuntime{CDIGPUs: map[int]string{0: "GPU-a", 1: "1"}}
	if got, ok := c.cdiDevices([]int{1, 0}); !ok || strings.Join(got, " ") != "nvidia.com/gpu=1 nvidia.com/gpu=GPU-a" {
		t.Errorf("cdiDevices = %v, %v", got, ok)
	}
	if _, ok := c.cdiDevices([]int{2}); ok {
		t.Error("a GPU without a CDI name went through CDI")
	}
	if _, ok := (&ContainerRuntime{}).cdiDevices([]int{0}); ok {
		t.Error("CDI without CDI specs")
	}
}
