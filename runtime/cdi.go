package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// CDI (the Container Device Interface) is how a host that has it says
// which device files, libraries and variables a GPU needs inside a
// container: spec files that the NVIDIA container toolkit writes
// (`nvidia-ctk cdi generate`), naming each GPU by index and by UUID.
// Where they list every GPU of a node, an image task's GPUs are passed
// in as CDI devices (`--device nvidia.com/gpu=GPU-…`), which brings the
// driver's libraries as well; elsewhere, the device files themselves.

// CDIDirs are where CDI spec files are read from, as the engines do.
var CDIDirs = []string{"/etc/cdi", "/var/run/cdi"}

// NvidiaCDIKind is the CDI kind of NVIDIA GPUs.
const NvidiaCDIKind = "nvidia.com/gpu"

// maxCDISpec bounds one spec file read.
const maxCDISpec = 4 << 20

// FindCDIDevices lists the device names the CDI spec files in dirs
// declare for kind. Missing directories are no error; a file that cannot
// be read or parsed is skipped and named in the returned error, with the
// names found elsewhere still returned.
func FindCDIDevices(dirs []string, kind string) (map[string]bool, error) {
	names := map[string]bool{}
	var bad []string
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			ext := filepath.Ext(e.Name())
			if e.IsDir() || (ext != ".yaml" && ext != ".json") {
				continue
			}
			p := filepath.Join(dir, e.Name())
			var spec struct {
				Kind    string `yaml:"kind"`
				Devices []struct {
					Name string `yaml:"name"`
				} `yaml:"devices"`
			}
			b, err := os.ReadFile(p)
			if err == nil && len(b) > maxCDISpec {
				err = fmt.Errorf("over %d bytes", maxCDISpec)
			}
			if err == nil {
				err = yaml.Unmarshal(b, &spec)
			}
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", p, err))
				continue
			}
			if spec.Kind != kind {
				continue
			}
			for _, d := range spec.Devices {
				if d.Name != "" {
					names[d.Name] = true
				}
			}
		}
	}
	if len(bad) > 0 {
		return names, fmt.Errorf("CDI spec files skipped: %s", strings.Join(bad, "; "))
	}
	return names, nil
}

// cdiDevices are the --device arguments for gpus through CDI, false
// when some GPU has no CDI name (then device files are passed instead).
func (c *ContainerRuntime) cdiDevices(gpus []int) ([]string, bool) {
	if len(gpus) == 0 || len(c.CDIGPUs) == 0 {
		return nil, false
	}
	kind := c.CDIKind
	if kind == "" {
		kind = NvidiaCDIKind
	}
	out := make([]string, 0, len(gpus))
	for _, g := range gpus {
		name, ok := c.CDIGPUs[g]
		if !ok {
			return nil, false
		}
		out = append(out, kind+"="+name)
	}
	return out, true
}
