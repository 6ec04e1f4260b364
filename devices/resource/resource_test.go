package resource

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
)

func TestParseSize(t *testing.T) {
	good := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"4096", 4096},
		{"4096B", 4096},
		{"4096b", 4096},
		{" 512MiB ", 512 * mib},
		{"40GiB", 40 * gib},
		{"40 GiB", 40 * gib},
		{"40Gi", 40 * gib},
		{"40gib", 40 * gib},
		{"1.5G", 3 * gib / 2},
		{"1.7GiB", 1825361101}, // 1825361100.8 rounded
		{"2K", 2 * kib},
		{"1T", 1 << 40},
		{"1TiB", 1 << 40},
		{"1PiB", 1 << 50},
		{"1KB", 1000},
		{"1kb", 1000},
		{"1MB", 1e6},
		{"1GB", 1e9},
		{"1.1GB", 1.1e9},
		{"1TB", 1e12},
		{"1PB", 1e15},
		{"1e3", 1000},
		{"+5", 5},
	}
	for _, tt := range good {
		got, err := ParseSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	bad := []struct {
		in  string
		err string
	}{
		{"", "empty size"},
		{"   ", "empty size"},
		{"abc", `invalid size "abc" (want e.g. 512MiB, 40GiB or a byte count)`},
		{"GiB", `invalid size "GiB"`},
		{"12XB", `invalid size "12XB"`},
		{"1,5G", `invalid size "1,5G"`},
		{"-1", `negative size "-1"`},
		{"-2GiB", `negative size "-2GiB"`},
		{"NaN", `invalid size "NaN"`},
		{"inf", `invalid size "inf"`},
		{"1.5", `size "1.5" is not a whole number of bytes`},
		{"0.5B", `size "0.5B" is not a whole number of bytes`},
		{"9EiB", `invalid size "9EiB"`},
		{"5000PiB", `size "5000PiB" too large`},
		{"1e30", `size "1e30" too large`},
	}
	for _, tt := range bad {
		got, err := ParseSize(tt.in)
		if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
			t.Errorf("ParseSize(%q) = %d, %v; want error %q", tt.in, got, err, tt.err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0B"},
		{1, "1B"},
		{1023, "1023B"},
		{1024, "1KiB"},
		{1536, "1.5KiB"},
		{40 * gib, "40GiB"},
		{42949672960, "40GiB"},
		{gib + gib/10, "1.1GiB"},
		{mib - 1, "1.0MiB"}, // not "1024.0KiB"
		{1 << 50, "1PiB"},
		{1 << 60, "1024PiB"},
	}
	for _, tt := range tests {
		if got := FormatSize(tt.in); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, s := range []int64{0, 1, 1024, 512 * mib, 40 * gib, 3 << 40} {
		if back, err := ParseSize(FormatSize(s)); err != nil || back != s {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", s, back, err)
		}
	}
}

func TestParseCPU(t *testing.T) {
	good := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"2", 2000},
		{"2.5", 2500},
		{" 4 ", 4000},
		{"0.5", 500},
		{"0.0004", 0},
		{"0.0005", 1},
		{"500m", 500},
		{"0m", 0},
		{"1500m", 1500},
		{"1e3", 1000000},
	}
	for _, tt := range good {
		got, err := ParseCPU(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseCPU(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "m", "-1", "-500m", "1.5m", "abc", "NaN", "Inf", "2e9", "1 m", "two"} {
		got, err := ParseCPU(in)
		if err == nil {
			t.Errorf("ParseCPU(%q) = %d, want an error", in, got)
		}
	}
	if _, err := ParseCPU("x"); err == nil || err.Error() != `invalid cpu amount "x" (want cores like 2 or 0.5, or millicores like 500m)` {
		t.Errorf("ParseCPU(x) error = %v", err)
	}
	if _, err := ParseCPU(""); err == nil || err.Error() != "empty cpu amount" {
		t.Errorf("ParseCPU(\"\") error = %v", err)
	}
	if got := CoresFromMilli(2500); got != 2.5 {
		t.Errorf("CoresFromMilli(2500) = %v", got)
	}
}

// node is a free vector with four GPUs: two whole A100-40GB, one A100-80GB
// with 300/1000 left and one T4 with 600/1000 left, and two FPGA models.
func node() Vector {
	return Vector{
		CPU: 8000, Memory: 64 * gib, Disk: 500 * gib,
		GPUs: []GPU{
			{Index: 0, Model: "NVIDIA A100-SXM4-40GB", Memory: 40 * gib, Free: WholeGPU},
			{Index: 1, Model: "NVIDIA A100-SXM4-40GB", Memory: 40 * gib, Free: WholeGPU},
			{Index: 2, Model: "NVIDIA A100-SXM4-80GB", Memory: 80 * gib, Free: 300},
			{Index: 3, Model: "Tesla T4", Memory: 16 * gib, Free: 600},
		},
		Devices: []Device{
			{Kind: "fpga", Model: "u250", Count: 1},
			{Kind: "fpga", Model: "u280", Count: 2},
			{Kind: "npu", Count: 1},
		},
	}
}

func TestFit(t *testing.T) {
	tests := []struct {
		name   string
		req    Request
		gpus   []int
		shares []int64
		reason string
	}{
		{"nothing", Request{}, nil, nil, ""},
		{"cpu memory disk", Request{CPU: 8000, Memory: 64 * gib, Disk: 500 * gib}, nil, nil, ""},
		{"cpu", Request{CPU: 8500}, nil, nil, "cpu: want 8.5 cores, free 8"},
		{"memory", Request{Memory: 65 * gib}, nil, nil, "memory: want 65GiB, free 64GiB"},
		{"disk", Request{Disk: 501 * gib}, nil, nil, "disk: want 501GiB, free 500GiB"},
		{"device any model", Request{Devices: []DeviceRequest{{Kind: "FPGA", Count: 3}}}, nil, nil, ""},
		{"device too many", Request{Devices: []DeviceRequest{{Kind: "fpga", Count: 4}}}, nil, nil, "device fpga: want 4, free 3"},
		{"device model", Request{Devices: []DeviceRequest{{Kind: "fpga", Model: "U280", Count: 2}}}, nil, nil, ""},
		{"device model too many", Request{Devices: []DeviceRequest{{Kind: "fpga", Model: "u250", Count: 2}}}, nil, nil, "device fpga u250: want 2, free 1"},
		{"device unknown kind", Request{Devices: []DeviceRequest{{Kind: "tpu", Count: 1}}}, nil, nil, "device tpu: want 1, free 0"},
		{"device requests together", Request{Devices: []DeviceRequest{{Kind: "fpga", Count: 1}, {Kind: "fpga", Model: "u250", Count: 1}}}, nil, nil, ""},
		{"device requests together too many", Request{Devices: []DeviceRequest{{Kind: "fpga", Count: 2}, {Kind: "fpga", Model: "u280", Count: 2}}}, nil, nil, "device fpga: want 2, free 1"},
		{"device same model twice", Request{Devices: []DeviceRequest{{Kind: "fpga", Model: "u280", Count: 2}, {Kind: "fpga", Model: "u280", Count: 1}}}, nil, nil, "device fpga u280: want 1, free 0"},
		{"one gpu", Request{GPU: GPURequest{Count: 1}}, []int{0}, []int64{WholeGPU}, ""},
		{"two gpus lowest indices", Request{GPU: GPURequest{Count: 2}}, []int{0, 1}, []int64{WholeGPU, WholeGPU}, ""},
		{"gpu count", Request{GPU: GPURequest{Count: 3}}, nil, nil, "gpu count: want 3, free 2 matching"},
		{"gpu memory", Request{GPU: GPURequest{Count: 1, Memory: 200 * gib}}, nil, nil, "gpu memory: want 200GiB per GPU, largest 80GiB"},
		{"gpu memory busy", Request{GPU: GPURequest{Count: 1, Memory: 80 * gib}}, nil, nil, "gpu count: want 1, free 0 matching"},
		{"gpu model", Request{GPU: GPURequest{Count: 1, Model: "h100"}}, nil, nil, `gpu model: want "h100", have NVIDIA A100-SXM4-40GB`},
		{"gpu model case-insensitive", Request{GPU: GPURequest{Count: 1, Model: "a100-sxm4-40"}}, []int{0}, []int64{WholeGPU}, ""},
		{"share best fit", Request{GPU: GPURequest{Share: 250}}, []int{2}, []int64{250}, ""},
		{"share skips too small", Request{GPU: GPURequest{Share: 500}}, []int{3}, []int64{500}, ""},
		{"share breaks a whole gpu", Request{GPU: GPURequest{Share: 700}}, []int{0}, []int64{700}, ""},
		{"share with count 1", Request{GPU: GPURequest{Count: 1, Share: 300}}, []int{2}, []int64{300}, ""},
		{"share with model", Request{GPU: GPURequest{Share: 100, Model: "T4"}}, []int{3}, []int64{100}, ""},
		{"share with memory", Request{GPU: GPURequest{Share: 100, Memory: 40 * gib}}, []int{2}, []int64{100}, ""},
		{"share too big", Request{GPU: GPURequest{Share: 999, Model: "T4"}}, nil, nil, "gpu share: want 999/1000 of one GPU, none has that much free"},
	}
	for _, tt := range tests {
		free := node()
		before := free.Clone()
		a, reason := Fit(free, tt.req)
		if reason != tt.reason {
			t.Errorf("%s: reason %q, want %q", tt.name, reason, tt.reason)
		}
		if !reflect.DeepEqual(a.GPUs, tt.gpus) || !reflect.DeepEqual(a.Shares, tt.shares) {
			t.Errorf("%s: allocation %+v, want gpus %v shares %v", tt.name, a, tt.gpus, tt.shares)
		}
		if !reflect.DeepEqual(free, before) {
			t.Errorf("%s: Fit changed free", tt.name)
		}
	}
	if _, reason := Fit(Vector{CPU: 1000}, Request{GPU: GPURequest{Count: 1}}); reason != "gpu: none on this node" {
		t.Errorf("no gpus: %q", reason)
	}
}

func TestFitDevicePicks(t *testing.T) {
	a, reason := Fit(node(), Request{Devices: []DeviceRequest{{Kind: "fpga", Count: 2}, {Kind: "npu", Count: 1}}})
	want := []DeviceAlloc{{Kind: "fpga", Model: "u250", Count: 1}, {Kind: "fpga", Model: "u280", Count: 1}, {Kind: "npu", Count: 1}}
	if reason != "" || !reflect.DeepEqual(a.Devices, want) {
		t.Errorf("picks %+v (%q), want %+v", a.Devices, reason, want)
	}
	// A request naming a model is served before one naming none, so the
	// model-less one does not take the only u250.
	a, reason = Fit(node(), Request{Devices: []DeviceRequest{{Kind: "fpga", Count: 1}, {Kind: "fpga", Model: "u250", Count: 1}}})
	want = []DeviceAlloc{{Kind: "fpga", Model: "u250", Count: 1}, {Kind: "fpga", Model: "u280", Count: 1}}
	if reason != "" || !reflect.DeepEqual(a.Devices, want) {
		t.Errorf("picks %+v (%q), want %+v", a.Devices, reason, want)
	}
	// With GPUs too, the picks come along.
	a, reason = Fit(node(), Request{GPU: GPURequest{Share: 100}, Devices: []DeviceRequest{{Kind: "npu", Count: 1}}})
	if reason != "" || len(a.Devices) != 1 || len(a.GPUs) != 1 {
		t.Errorf("share with device: %+v (%q)", a, reason)
	}
	a, reason = Fit(node(), Request{GPU: GPURequest{Count: 1}, Devices: []DeviceRequest{{Kind: "npu", Count: 1}}})
	if reason != "" || len(a.Devices) != 1 || len(a.GPUs) != 1 {
		t.Errorf("gpu with device: %+v (%q)", a, reason)
	}
}

func TestTakeGiveRoundTrip(t *testing.T) {
	reqs := []Request{
		{CPU: 1500, Memory: 4 * gib, Disk: gib},
		{CPU: 500, GPU: GPURequest{Count: 2}},
		{GPU: GPURequest{Share: 250}},
		{GPU: GPURequest{Share: 600, Model: "t4"}},
		{Devices: []DeviceRequest{{Kind: "fpga", Count: 2}}},
		{Devices: []DeviceRequest{{Kind: "npu", Count: 1}, {Kind: "fpga", Model: "u280", Count: 1}}},
	}
	free := node()
	orig := free.Clone()
	var allocs []Allocation
	for i, r := range reqs {
		a, reason := Fit(free, r)
		if reason != "" {
			t.Fatalf("request %d: %s", i, reason)
		}
		free.Take(r, a)
		allocs = append(allocs, a)
	}
	if free.CPU != 6000 || free.Memory != 60*gib || free.Disk != 499*gib {
		t.Errorf("after Take: %v", free)
	}
	if free.FreeGPUs() != 0 || free.GPUShare() != 50 {
		t.Errorf("after Take: %d free GPUs, share %d", free.FreeGPUs(), free.GPUShare())
	}
	if free.DeviceCount("fpga", "") != 0 || free.DeviceCount("npu", "") != 0 {
		t.Errorf("after Take: devices %+v", free.Devices)
	}
	// Nothing more fits on the GPUs.
	if _, reason := Fit(free, Request{GPU: GPURequest{Share: 100}}); reason == "" {
		t.Error("a share fitted on full GPUs")
	}
	// Give back in another order than taken.
	for _, i := range []int{3, 0, 5, 1, 4, 2} {
		free.Give(reqs[i], allocs[i])
	}
	if !reflect.DeepEqual(free, orig) {
		t.Errorf("after Give:\n got  %+v\n want %+v", free, orig)
	}
}

func TestTakeGiveDeviceModelsPreserved(t *testing.T) {
	// A model-less request spread over two models must come back to the
	// same models, not all to the first.
	free := Vector{Devices: []Device{{Kind: "fpga", Model: "a", Count: 1}, {Kind: "fpga", Model: "b", Count: 1}}}
	orig := free.Clone()
	req := Request{Devices: []DeviceRequest{{Kind: "fpga", Count: 2}}}
	a, reason := Fit(free, req)
	if reason != "" {
		t.Fatal(reason)
	}
	free.Take(req, a)
	free.Give(req, a)
	if !reflect.DeepEqual(free, orig) || free.DeviceCount("fpga", "b") != 1 {
		t.Errorf("after round trip %+v, want %+v", free.Devices, orig.Devices)
	}
}

func TestTakeWithoutDevicePicks(t *testing.T) {
	// An allocation built by hand, without device picks, still takes and
	// gives the requested devices.
	free := node()
	req := Request{Devices: []DeviceRequest{{Kind: "fpga", Model: "u280", Count: 2}}}
	free.Take(req, Allocation{})
	if free.DeviceCount("fpga", "u280") != 0 {
		t.Errorf("Take: %+v", free.Devices)
	}
	free.Give(req, Allocation{})
	if !reflect.DeepEqual(free, node()) {
		t.Errorf("Give: %+v", free.Devices)
	}
}

func TestTakePanics(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		a    Allocation
	}{
		{"cpu", Request{CPU: 9000}, Allocation{}},
		{"unknown gpu", Request{}, Allocation{GPUs: []int{9}, Shares: []int64{WholeGPU}}},
		{"gpu share", Request{}, Allocation{GPUs: []int{2}, Shares: []int64{400}}},
		{"device pick", Request{}, Allocation{Devices: []DeviceAlloc{{Kind: "fpga", Model: "u250", Count: 2}}}},
	}
	for _, tt := range tests {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Take did not panic", tt.name)
				}
			}()
			v := node()
			v.Take(tt.req, tt.a)
		}()
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Give beyond a whole GPU did not panic")
			}
		}()
		v := node()
		v.Give(Request{}, Allocation{GPUs: []int{0}, Shares: []int64{1}})
	}()
}

func TestConstraints(t *testing.T) {
	labels := map[string]string{"zone": "a", "arch": "amd64"}
	tests := []struct {
		site string
		req  Request
		want string
	}{
		{"eu", Request{}, ""},
		{"eu", Request{Site: "eu"}, ""},
		{"eu", Request{Site: "us"}, `site "eu" != required "us"`},
		{"eu", Request{Labels: map[string]string{"zone": "a"}}, ""},
		{"eu", Request{Labels: map[string]string{"zone": "b"}}, `label zone="a" != required "b"`},
		{"eu", Request{Labels: map[string]string{"gpu": "yes"}}, `label gpu="" != required "yes"`},
		// The first unmet label in key order is named.
		{"eu", Request{Labels: map[string]string{"zone": "b", "arch": "arm64"}}, `label arch="amd64" != required "arm64"`},
		{"eu", Request{Site: "us", Labels: map[string]string{"zone": "b"}}, `site "eu" != required "us"`},
	}
	for _, tt := range tests {
		if got := Constraints(tt.site, labels, tt.req); got != tt.want {
			t.Errorf("Constraints(%q, %v) = %q, want %q", tt.site, tt.req, got, tt.want)
		}
	}
}

func TestVectorJSON(t *testing.T) {
	b, err := json.Marshal(Vector{CPU: 2500, Memory: gib, Disk: 2 * gib})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"cpu":2.5,"memory":1073741824,"disk":2147483648,"gpus":[],"devices":[]}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}

	v := node()
	v.GPUs[0].UUID, v.GPUs[0].Compute = "GPU-0", "8.0"
	v.Devices[0].Attributes = map[string]string{"vendor": "xilinx"}
	b, err = json.Marshal(&v)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"cpu":8,`,
		`{"index":0,"uuid":"GPU-0","model":"NVIDIA A100-SXM4-40GB","memory":42949672960,"compute_capability":"8.0","free_milli":1000}`,
		`{"kind":"fpga","model":"u250","count":1,"attributes":{"vendor":"xilinx"}}`,
		`{"kind":"npu","count":1}`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s\nlacks %s", b, want)
		}
	}
	var back Vector
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, v) {
		t.Errorf("round trip:\n got  %+v\n want %+v", back, v)
	}
	if err := json.Unmarshal([]byte(`{"cpu":"x"}`), &back); err == nil {
		t.Error("bad cpu unmarshalled")
	}
	var milli Vector
	if err := json.Unmarshal([]byte(`{"cpu":0.25}`), &milli); err != nil || milli.CPU != 250 {
		t.Errorf("cpu 0.25 → %d, %v", milli.CPU, err)
	}
}

func TestVectorHelpers(t *testing.T) {
	v := node()
	if got := v.FreeGPUs(); got != 2 {
		t.Errorf("FreeGPUs = %d", got)
	}
	if got := v.GPUShare(); got != 2900 {
		t.Errorf("GPUShare = %d", got)
	}
	if got := v.DeviceCount("FPGA", ""); got != 3 {
		t.Errorf("DeviceCount(FPGA) = %d", got)
	}
	if got := v.DeviceCount("fpga", "U250"); got != 1 {
		t.Errorf("DeviceCount(fpga, U250) = %d", got)
	}
	if got, want := v.String(), "8cpu 64GiB 2×NVIDIA A100-SXM4-40GB 1×NVIDIA A100-SXM4-80GB 1×Tesla T4 1×fpga 2×fpga 1×npu"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}

	v.Devices[0].Attributes = map[string]string{"k": "v"}
	c := v.Clone()
	c.GPUs[0].Free = 0
	c.Devices[0].Count = 99
	c.Devices[0].Attributes["k"] = "changed"
	if v.GPUs[0].Free != WholeGPU || v.Devices[0].Count != 1 || v.Devices[0].Attributes["k"] != "v" {
		t.Error("Clone shares state with the original")
	}
	if c := (Vector{}).Clone(); c.GPUs != nil || c.Devices != nil {
		t.Errorf("Clone of nil lists = %#v", c)
	}
	if c := (Vector{GPUs: []GPU{}, Devices: []Device{}}).Clone(); c.GPUs == nil || c.Devices == nil {
		t.Errorf("Clone of empty lists = %#v", c)
	}
	if !(GPURequest{Count: 1}).Wants() || !(GPURequest{Share: 1}).Wants() || (GPURequest{Memory: 1}).Wants() {
		t.Error("Wants")
	}
}

func TestEnforcementRefusal(t *testing.T) {
	mem := Request{Memory: 1 << 30, Limits: LimitMemory}
	cases := []struct {
		name string
		e    Enforcement
		req  Request
		want string
	}{
		{"enforces all", Enforcement{}, mem, ""},
		{"no limit asked", Enforcement{Missing: AllLimits}, Request{CPU: 1000}, ""},
		{"memory missing", Enforcement{Missing: LimitMemory}, mem, "limits: memory not enforced on this node"},
		{"both missing", Enforcement{Missing: AllLimits}, Request{CPU: 1, Memory: 1, Limits: TaskLimits}, "limits: cpu, memory not enforced on this node"},
		{"only cpu missing", Enforcement{Missing: LimitCPU}, mem, ""},
		{"runs unenforced", Enforcement{Missing: AllLimits, Unenforced: true}, mem, ""},
	}
	for _, c := range cases {
		if got := c.e.Refusal(c.req); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := (Enforcement{Missing: LimitPids}).Enforces().String(); got != "cpu, memory" {
		t.Errorf("Enforces: %q", got)
	}
	if got := Limits(0).String(); got != "none" {
		t.Errorf("empty set: %q", got)
	}
}

// TestContainerConstraints: an image task needs a node with a working
// engine; one that also asks for GPUs, a node whose GPUs passed the
// start-up check for containers (a node that never ran it, or whose GPUs
// are declared, has no label and qualifies). Label misses come first.
func TestContainerConstraints(t *testing.T) {
	image := map[string]string{ContainerLabel: "yes"}
	gpu := GPURequest{Count: 1}
	tests := []struct {
		name   string
		labels map[string]string
		req    Request
		want   string
	}{
		{"process task anywhere", nil, Request{GPU: gpu}, ""},
		{"image task, no engine", nil, Request{Labels: image}, NoContainerRuntime},
		{"image task, engine", map[string]string{ContainerLabel: "yes"}, Request{Labels: image}, ""},
		{"GPU image task, GPUs checked", map[string]string{ContainerLabel: "yes"}, Request{Labels: image, GPU: gpu}, ""},
		{"GPU image task, GPU check failed", map[string]string{ContainerLabel: "yes", ContainerGPULabel: "no"}, Request{Labels: image, GPU: gpu}, NoContainerGPU},
		{"GPU share, GPU check failed", map[string]string{ContainerLabel: "yes", ContainerGPULabel: "no"}, Request{Labels: image, GPU: GPURequest{Share: 500}}, NoContainerGPU},
		{"CPU image task, GPU check failed", map[string]string{ContainerLabel: "yes", ContainerGPULabel: "no"}, Request{Labels: image}, ""},
		{"GPU process task, GPU check failed", map[string]string{ContainerLabel: "yes", ContainerGPULabel: "no"}, Request{GPU: gpu}, ""},
		{"label miss first", map[string]string{ContainerGPULabel: "no"}, Request{Labels: map[string]string{ContainerLabel: "yes", "zone": "a"}, GPU: gpu}, `label zone="" != required "a"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Constraints("", tc.labels, tc.req); got != tc.want {
				t.Fatalf("Constraints = %q, want %q", got, tc.want)
			}
		})
	}
}
