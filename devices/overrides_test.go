package devices

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agora-sched/agora/devices/resource"
)

const gib = int64(1) << 30

func ptr(v int64) *int64 { return &v }

func TestParseOverridesGoodFile(t *testing.T) {
	data := `
# A node with two declared GPUs and an FPGA.
cpu: 6.5
memory: 64GiB
disk: 1099511627776
gpus:
  - model: NVIDIA A100-SXM4-40GB
    memory: 40GiB
    uuid: GPU-aaaa
    compute: 8.0
  - {model: "NVIDIA H100 80GB HBM3", memory: "80 GiB", compute: "9.0"}
devices:
  - kind: fpga
    model: u250
    count: 2
    attributes: {vendor: xilinx, pcie: 4, ecc: true}
  - {kind: npu, count: 1}
`
	o, err := ParseOverrides([]byte(data), "node.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Overrides{
		File:   "node.yaml",
		CPU:    ptr(6500),
		Memory: ptr(64 * gib),
		Disk:   ptr(1 << 40),
		GPUs: []resource.GPU{
			{Index: 0, UUID: "GPU-aaaa", Model: "NVIDIA A100-SXM4-40GB", Memory: 40 * gib, Compute: "8.0", Free: resource.WholeGPU},
			{Index: 1, Model: "NVIDIA H100 80GB HBM3", Memory: 80 * gib, Compute: "9.0", Free: resource.WholeGPU},
		},
		GPUsSet: true,
		Devices: []resource.Device{
			{Kind: "fpga", Model: "u250", Count: 2, Attributes: map[string]string{"vendor": "xilinx", "pcie": "4", "ecc": "true"}},
			{Kind: "npu", Count: 1},
		},
		DevicesSet: true,
	}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("got  %+v\nwant %+v", o, want)
	}
	if got := strings.Join(o.Declared(), ","); got != "cpu,memory,disk,gpus,devices" {
		t.Errorf("Declared() = %s", got)
	}
}

func TestParseOverridesValues(t *testing.T) {
	tests := []struct {
		yaml string
		want Overrides
	}{
		{"cpu: 4", Overrides{CPU: ptr(4000)}},
		{"cpu: 0.5", Overrides{CPU: ptr(500)}},
		{"cpu: 500m", Overrides{CPU: ptr(500)}},
		{`cpu: "2"`, Overrides{CPU: ptr(2000)}},
		{"cpu: 0", Overrides{CPU: ptr(0)}},
		{"memory: 16GiB", Overrides{Memory: ptr(16 * gib)}},
		{"memory: 17179869184", Overrides{Memory: ptr(16 * gib)}},
		{"memory: 0x400", Overrides{Memory: ptr(1024)}},
		{"memory: 1.5e9", Overrides{Memory: ptr(1500000000)}},
		{"disk: 0", Overrides{Disk: ptr(0)}},
		{"disk: 500GB", Overrides{Disk: ptr(500e9)}},
		{"gpus: []", Overrides{GPUs: []resource.GPU{}, GPUsSet: true}},
		{"devices: []", Overrides{Devices: []resource.Device{}, DevicesSet: true}},
	}
	for _, tt := range tests {
		o, err := ParseOverrides([]byte(tt.yaml), "r.yaml")
		if err != nil {
			t.Errorf("%q: %v", tt.yaml, err)
			continue
		}
		tt.want.File = "r.yaml"
		if !reflect.DeepEqual(o, tt.want) {
			t.Errorf("%q: got %+v, want %+v", tt.yaml, o, tt.want)
		}
	}
	o, err := ParseOverrides([]byte("gpus:\n  - &a {model: T4, memory: 16GiB}\n  - *a\n"), "alias.yaml")
	if err != nil || len(o.GPUs) != 2 || o.GPUs[1].Model != "T4" || o.GPUs[1].Index != 1 {
		t.Errorf("aliases: %+v, %v", o, err)
	}
}

func TestParseOverridesEmpty(t *testing.T) {
	for _, data := range []string{"", "\n\n", "# only a comment\n", "---\n", "~\n", "{}\n", "---\n# nothing\n"} {
		o, err := ParseOverrides([]byte(data), "empty.yaml")
		if err != nil {
			t.Errorf("%q: %v", data, err)
			continue
		}
		if o.CPU != nil || o.Memory != nil || o.Disk != nil || o.GPUsSet || o.DevicesSet || len(o.Declared()) != 0 {
			t.Errorf("%q: declared %v", data, o.Declared())
		}
		v := resource.Vector{CPU: 1000, GPUs: []resource.GPU{{Model: "X", Memory: 1, Free: resource.WholeGPU}}}
		if got := o.Apply(v); !reflect.DeepEqual(got, v) {
			t.Errorf("%q: Apply changed %v to %v", data, v, got)
		}
	}
}

func TestParseOverridesErrors(t *testing.T) {
	tests := []struct {
		yaml  string
		field string // the FileError's Field
		msg   string // the whole message starts with this
	}{
		// The file as a whole.
		{"cpu: [1", "", "resources file bad.yaml: invalid YAML: line 1:"},
		{"- cpu: 1", "", "resources file bad.yaml: want a mapping of cpu, memory, disk, gpus and devices, got a list"},
		{"4", "", "resources file bad.yaml: want a mapping"},
		{"cpu: 1\n---\ncpu: 2\n", "", "resources file bad.yaml: more than one YAML document"},
		// Top-level keys.
		{"cpus: 4", "cpus", "resources file bad.yaml: cpus: unknown key (want cpu, memory, disk, gpus or devices)"},
		{"cpu: 1\ncpu: 2", "cpu", "resources file bad.yaml: cpu: line 2: duplicate key (first at line 1)"},
		{"[a]: 1", "", "resources file bad.yaml: line 1: keys must be strings, got a list"},
		{"cpu: -1", "cpu", `resources file bad.yaml: cpu: invalid cpu amount -1`},
		{`cpu: "-500m"`, "cpu", `resources file bad.yaml: cpu: invalid cpu amount "-500m"`},
		{"cpu: lots", "cpu", `resources file bad.yaml: cpu: invalid cpu amount "lots"`},
		{"cpu: true", "cpu", "resources file bad.yaml: cpu: want cores like 4 or 0.5, or millicores like \"500m\", got the boolean true"},
		{"cpu:", "cpu", "resources file bad.yaml: cpu: want cores like 4 or 0.5, or millicores like \"500m\", got null"},
		{"cpu: .inf", "cpu", "resources file bad.yaml: cpu: invalid cpu amount .inf"},
		{"memory: abc", "memory", `resources file bad.yaml: memory: invalid size "abc"`},
		{"memory: -1", "memory", "resources file bad.yaml: memory: negative size -1"},
		{`memory: "-1GiB"`, "memory", `resources file bad.yaml: memory: negative size "-1GiB"`},
		{"memory: 1.5", "memory", `resources file bad.yaml: memory: size "1.5" is not a whole number of bytes`},
		{"memory: [1]", "memory", "resources file bad.yaml: memory: want a size like 16GiB or a byte count, got a list"},
		{"memory: 99999999999999999999", "memory", `resources file bad.yaml: memory: size "99999999999999999999" too large`},
		{"disk: {a: 1}", "disk", "resources file bad.yaml: disk: want a size like 16GiB or a byte count, got a mapping"},
		{"disk: -5GiB", "disk", `resources file bad.yaml: disk: negative size "-5GiB"`},
		// GPUs.
		{"gpus:", "gpus", "resources file bad.yaml: gpus: want a list ([] for none), got null"},
		{"gpus: {model: x}", "gpus", "resources file bad.yaml: gpus: want a list ([] for none), got a mapping"},
		{"gpus: [T4]", "gpus[0]", `resources file bad.yaml: gpus[0]: want a mapping with model and memory, got the string "T4"`},
		{"gpus: [{memory: 16GiB}]", "gpus[0].model", "resources file bad.yaml: gpus[0].model: missing"},
		{"gpus: [{model: '', memory: 16GiB}]", "gpus[0].model", "resources file bad.yaml: gpus[0].model: empty"},
		{"gpus: [{model: 4090, memory: 16GiB}]", "gpus[0].model", "resources file bad.yaml: gpus[0].model: want a string, got the number 4090"},
		{"gpus: [{model: T4}]", "gpus[0].memory", "resources file bad.yaml: gpus[0].memory: missing"},
		{"gpus: [{model: T4, memory: 0}]", "gpus[0].memory", "resources file bad.yaml: gpus[0].memory: must be more than zero"},
		{"gpus:\n- {model: T4, memory: 16GiB}\n- {model: T4, memory: abc}", "gpus[1].memory", `resources file bad.yaml: gpus[1].memory: invalid size "abc"`},
		{"gpus: [{model: T4, memory: -16GiB}]", "gpus[0].memory", `resources file bad.yaml: gpus[0].memory: negative size "-16GiB"`},
		{"gpus: [{model: T4, memory: 16GiB, cores: 2}]", "gpus[0].cores", "resources file bad.yaml: gpus[0].cores: unknown key (want model, memory, uuid or compute)"},
		{"gpus: [{model: T4, memory: 16GiB, compute: 7}]", "gpus[0].compute", "resources file bad.yaml: gpus[0].compute: want major.minor, such as \"8.0\", got the number 7"},
		{"gpus: [{model: T4, memory: 16GiB, compute: 'seven'}]", "gpus[0].compute", `resources file bad.yaml: gpus[0].compute: invalid compute capability "seven"`},
		{"gpus: [{model: T4, memory: 16GiB, uuid: [x]}]", "gpus[0].uuid", "resources file bad.yaml: gpus[0].uuid: want a string, got a list"},
		{"gpus: [{model: T4, memory: 1GiB, model: T4}]", "gpus[0].model", "resources file bad.yaml: gpus[0].model: line 1: duplicate key (first at line 1)"},
		{"gpus:\n- {model: T4, memory: 1GiB, uuid: GPU-1}\n- {model: T4, memory: 1GiB, uuid: GPU-1}", "gpus[1].uuid", "resources file bad.yaml: gpus[1].uuid: GPU-1 is also gpus[0]'s"},
		{"gpus: [{model: " + strings.Repeat("x", 129) + ", memory: 1GiB}]", "gpus[0].model", "resources file bad.yaml: gpus[0].model: longer than 128 characters"},
		// Devices.
		{"devices: fpga", "devices", `resources file bad.yaml: devices: want a list ([] for none), got the string "fpga"`},
		{"devices: [{count: 1}]", "devices[0].kind", "resources file bad.yaml: devices[0].kind: missing"},
		{"devices: [{kind: fpga}]", "devices[0].count", "resources file bad.yaml: devices[0].count: missing"},
		{"devices: [{kind: fpga, count: 0}]", "devices[0].count", "resources file bad.yaml: devices[0].count: must be at least 1, got 0"},
		{"devices: [{kind: fpga, count: -2}]", "devices[0].count", "resources file bad.yaml: devices[0].count: must be at least 1, got -2"},
		{"devices: [{kind: fpga, count: 1.5}]", "devices[0].count", "resources file bad.yaml: devices[0].count: want a whole number, got the number 1.5"},
		{`devices: [{kind: fpga, count: "2"}]`, "devices[0].count", `resources file bad.yaml: devices[0].count: want a whole number, got the string "2"`},
		{"devices: [{kind: fpga, count: 1, vendor: x}]", "devices[0].vendor", "resources file bad.yaml: devices[0].vendor: unknown key (want kind, model, count, attributes or paths)"},
		{"devices: [{kind: fpga, count: 2, paths: [/dev/a0]}]", "devices[0].paths", "resources file bad.yaml: devices[0].paths: 1 paths for 2 units: give one device path per unit"},
		{"devices: [{kind: fpga, count: 1, paths: [/tmp/a0]}]", "devices[0].paths", `resources file bad.yaml: devices[0].paths: "/tmp/a0" is not a clean path under /dev`},
		{"devices: [{kind: fpga, count: 2, paths: [/dev/a0, /dev/a0]}]", "devices[0].paths", "resources file bad.yaml: devices[0].paths: /dev/a0 is given twice"},
		{"devices:\n- {kind: fpga, model: u250, count: 1}\n- {kind: fpga, model: u250, count: 2}", "devices[1]", `resources file bad.yaml: devices[1]: fpga "u250" is also devices[0]: give one entry with the total count`},
		{"devices:\n- {kind: fpga, count: 1, paths: [/dev/a0]}\n- {kind: npu, count: 1, paths: [/dev/a0]}", "devices[1].paths", "resources file bad.yaml: devices[1].paths: /dev/a0 is also devices[0]'s"},
		{"devices: [{kind: fpga, count: 1, paths: /dev/a0}]", "devices[0].paths", "resources file bad.yaml: devices[0].paths: want a list of device paths"},
		{"devices: [{kind: fpga, count: 1, attributes: [x]}]", "devices[0].attributes", "resources file bad.yaml: devices[0].attributes: want a mapping of names to values, got a list"},
		{"devices: [{kind: fpga, count: 1, attributes: {lanes: [1, 2]}}]", "devices[0].attributes.lanes", "resources file bad.yaml: devices[0].attributes.lanes: want a value such as a string or number, got a list"},
		{"devices:\n- {kind: npu, count: 1}\n- {kind: fpga, count: 1, model: {}}", "devices[1].model", "resources file bad.yaml: devices[1].model: want a string, got a mapping"},
	}
	for _, tt := range tests {
		_, err := ParseOverrides([]byte(tt.yaml), "bad.yaml")
		if err == nil {
			t.Errorf("%q: no error", tt.yaml)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, tt.msg) {
			t.Errorf("%q:\n got  %s\n want %s…", tt.yaml, msg, tt.msg)
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("%q: message is not one line: %q", tt.yaml, msg)
		}
		var fe *FileError
		if !errors.As(err, &fe) {
			t.Errorf("%q: %T is not a *FileError", tt.yaml, err)
		} else if fe.Field != tt.field || fe.File != "bad.yaml" {
			t.Errorf("%q: file %q field %q, want bad.yaml %q", tt.yaml, fe.File, fe.Field, tt.field)
		}
	}
}

func TestParseOverridesLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString("gpus:\n")
	for range 65 {
		b.WriteString("- {model: T4, memory: 16GiB}\n")
	}
	_, err := ParseOverrides([]byte(b.String()), "many.yaml")
	if err == nil || err.Error() != "resources file many.yaml: gpus: 65 entries, at most 64 allowed" {
		t.Errorf("65 gpus: %v", err)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "resources.yaml")
	if err := os.WriteFile(good, []byte("cpu: 2\ngpus: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := LoadFile(good)
	if err != nil || o.CPU == nil || *o.CPU != 2000 || !o.GPUsSet || o.File != good {
		t.Errorf("LoadFile good: %+v, %v", o, err)
	}

	missing := filepath.Join(dir, "nope.yaml")
	_, err = LoadFile(missing)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LoadFile missing: %v", err)
	}
	if want := "resources file " + missing + ": open " + missing + ": no such file or directory"; err.Error() != want {
		t.Errorf("LoadFile missing:\n got  %s\n want %s", err, want)
	}

	bad := filepath.Join(dir, "gpu.yaml")
	if err := os.WriteFile(bad, []byte("gpus:\n- {model: A, memory: 1GiB}\n- {model: B, memory: abc}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadFile(bad)
	if want := "resources file " + bad + `: gpus[1].memory: invalid size "abc"`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("LoadFile bad: %v, want %s…", err, want)
	}
}

func TestApply(t *testing.T) {
	discovered := resource.Vector{
		CPU: 8000, Memory: 32 * gib, Disk: 100 * gib,
		GPUs:    []resource.GPU{{Index: 0, UUID: "GPU-0", Model: "NVIDIA T4", Memory: 16 * gib, Compute: "7.5", Free: resource.WholeGPU}},
		Devices: []resource.Device{{Kind: "fpga", Count: 1, Attributes: map[string]string{"a": "b"}}},
	}
	orig := discovered.Clone()
	declaredGPUs := []resource.GPU{
		{Index: 7, Model: "A100", Memory: 40 * gib, Free: 3},
		{Index: 9, Model: "A100", Memory: 40 * gib},
	}
	tests := []struct {
		name string
		o    Overrides
		want func(v *resource.Vector)
	}{
		{"nothing", Overrides{}, func(v *resource.Vector) {}},
		{"cpu", Overrides{CPU: ptr(2500)}, func(v *resource.Vector) { v.CPU = 2500 }},
		{"zero disk", Overrides{Disk: ptr(0)}, func(v *resource.Vector) { v.Disk = 0 }},
		{"memory", Overrides{Memory: ptr(gib)}, func(v *resource.Vector) { v.Memory = gib }},
		{"no gpus", Overrides{GPUs: []resource.GPU{}, GPUsSet: true}, func(v *resource.Vector) { v.GPUs = []resource.GPU{} }},
		{"nil gpus set", Overrides{GPUsSet: true}, func(v *resource.Vector) { v.GPUs = []resource.GPU{} }},
		{"gpus renumbered and free", Overrides{GPUs: declaredGPUs, GPUsSet: true}, func(v *resource.Vector) {
			v.GPUs = []resource.GPU{
				{Index: 0, Model: "A100", Memory: 40 * gib, Free: resource.WholeGPU},
				{Index: 1, Model: "A100", Memory: 40 * gib, Free: resource.WholeGPU},
			}
		}},
		{"gpus absent keep discovered", Overrides{GPUs: declaredGPUs}, func(v *resource.Vector) {}},
		{"devices", Overrides{Devices: []resource.Device{{Kind: "npu", Count: 4}}, DevicesSet: true}, func(v *resource.Vector) {
			v.Devices = []resource.Device{{Kind: "npu", Count: 4}}
		}},
		{"no devices", Overrides{DevicesSet: true}, func(v *resource.Vector) { v.Devices = []resource.Device{} }},
	}
	for _, tt := range tests {
		want := discovered.Clone()
		tt.want(&want)
		got := tt.o.Apply(discovered)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, want)
		}
		if !reflect.DeepEqual(discovered, orig) {
			t.Fatalf("%s: Apply changed its argument", tt.name)
		}
	}
	if declaredGPUs[0].Index != 7 || declaredGPUs[0].Free != 3 {
		t.Error("Apply changed the overrides' GPUs")
	}

	// The result shares nothing with the overrides or the input.
	o := Overrides{Devices: []resource.Device{{Kind: "fpga", Count: 1, Attributes: map[string]string{"k": "v"}}}, DevicesSet: true}
	got := o.Apply(discovered)
	got.Devices[0].Attributes["k"] = "changed"
	if o.Devices[0].Attributes["k"] != "v" {
		t.Error("Apply's devices share attribute maps with the overrides")
	}
}

func TestApplyParsedAbsentVersusPresentGPUs(t *testing.T) {
	discovered := resource.Vector{CPU: 4000, GPUs: []resource.GPU{{Index: 0, Model: "NVIDIA T4", Memory: 16 * gib, Free: resource.WholeGPU}}}
	absent, err := ParseOverrides([]byte("cpu: 2\n"), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := absent.Apply(discovered); len(got.GPUs) != 1 || got.CPU != 2000 {
		t.Errorf("absent gpus: %v", got)
	}
	present, err := ParseOverrides([]byte("gpus: []\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := present.Apply(discovered); got.GPUs == nil || len(got.GPUs) != 0 || got.CPU != 4000 {
		t.Errorf("gpus: []: %v", got)
	}
}
