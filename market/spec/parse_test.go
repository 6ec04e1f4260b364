package spec

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

// testNow is the fixed submit time the tests parse against.
var testNow = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

const fullSpec = `
name: train-resnet          # required, 1..128 chars
type: training
priority: 7
deadline: 30m
tasks:
  - name: prep
    command: ["sh", "-c", "python3 prep.py"]
    resources: {cpu: 2, memory: 4GiB, disk: 1GiB}
  - name: train
    after: [prep]
    command: ["python3", "train.py"]
    env: {EPOCHS: "10"}
    resources: {cpu: 8, memory: 32GiB, gpu: {count: 1, memory: 40GiB, model: A100}, labels: {zone: a}, site: lab, devices: [{kind: fpga, model: u250, count: 1}]}
    estimate: 45m
    checkpoint: {interval: 60s}
    retries: 5
    timeout: 2h
    replicas: 3
    gang: true
    pack: true
  - name: eval
    after: [train]
    command: python3 eval.py --fast
    resources: {cpu: "500m", gpu: 0.25}
`

func fullJob() *Job {
	return &Job{
		Name:     "train-resnet",
		Type:     "training",
		Priority: 7,
		Deadline: testNow.Add(30 * time.Minute),
		Tasks: []Task{
			{
				Name:     "prep",
				Command:  []string{"sh", "-c", "python3 prep.py"},
				Request:  resource.Request{CPU: 2000, Memory: 4 << 30, Disk: 1 << 30, Limits: resource.LimitCPU | resource.LimitMemory},
				Retries:  DefaultRetries,
				Replicas: 1,
			},
			{
				Name:    "train",
				Command: []string{"python3", "train.py"},
				Env:     map[string]string{"EPOCHS": "10"},
				Request: resource.Request{
					CPU:     8000,
					Memory:  32 << 30,
					GPU:     resource.GPURequest{Count: 1, Memory: 40 << 30, Model: "A100"},
					Devices: []resource.DeviceRequest{{Kind: "fpga", Model: "u250", Count: 1}},
					Labels:  map[string]string{"zone": "a"},
					Site:    "lab",
					Limits:  resource.LimitCPU | resource.LimitMemory,
				},
				After:              []string{"prep"},
				Estimate:           45 * time.Minute,
				Timeout:            2 * time.Hour,
				CheckpointInterval: time.Minute,
				Retries:            5,
				Replicas:           3,
				Gang:               true,
				Pack:               true,
			},
			{
				Name:     "eval",
				Command:  []string{"sh", "-c", "python3 eval.py --fast"},
				Request:  resource.Request{CPU: 500, GPU: resource.GPURequest{Share: 250}, Limits: resource.LimitCPU},
				After:    []string{"train"},
				Retries:  DefaultRetries,
				Replicas: 1,
			},
		},
	}
}

func mustParse(t *testing.T, spec string) *Job {
	t.Helper()
	j, err := Parse([]byte(spec), testNow)
	if err != nil {
		t.Fatalf("Parse: unexpected error:\n%v", err)
	}
	return j
}

func TestParseFullExample(t *testing.T) {
	got := mustParse(t, fullSpec)
	want := fullJob()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse mismatch\n got: %+v\nwant: %+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("Validate of a parsed job: %v", err)
	}
}

func TestParseDefaults(t *testing.T) {
	j := mustParse(t, "name: solo\ntasks:\n  - name: only\n    command: [/bin/true]\n")
	if j.Type != "solo" || j.Priority != DefaultPriority || !j.Deadline.IsZero() {
		t.Errorf("job defaults: type %q priority %d deadline %v", j.Type, j.Priority, j.Deadline)
	}
	task := j.Tasks[0]
	want := Task{Name: "only", Command: []string{"/bin/true"}, Request: resource.Request{CPU: DefaultCPUMilli}, Retries: DefaultRetries, Replicas: DefaultReplicas}
	if !reflect.DeepEqual(task, want) {
		t.Errorf("task defaults:\n got %+v\nwant %+v", task, want)
	}
}

func TestParseNullMeansAbsent(t *testing.T) {
	j := mustParse(t, "name: n\ntype: ~\npriority: null\ntasks:\n  - name: a\n    command: [x]\n    timeout:\n    retries: ~\n")
	if j.Type != "n" || j.Priority != DefaultPriority || j.Tasks[0].Timeout != 0 || j.Tasks[0].Retries != DefaultRetries {
		t.Errorf("null fields did not take defaults: %+v", j)
	}
}

func TestParseJSON(t *testing.T) {
	compact := `{"name":"train-resnet","type":"training","priority":7,"deadline":"30m","tasks":[
	{"name":"prep","command":["sh","-c","python3 prep.py"],"resources":{"cpu":2,"memory":"4GiB","disk":"1GiB"}},
	{"name":"train","after":["prep"],"command":["python3","train.py"],"env":{"EPOCHS":"10"},
	 "resources":{"cpu":8,"memory":"32GiB","gpu":{"count":1,"memory":"40GiB","model":"A100"},"labels":{"zone":"a"},"site":"lab",
	 "devices":[{"kind":"fpga","model":"u250","count":1}]},
	 "estimate":"45m","checkpoint":{"interval":"60s"},"retries":5,"timeout":"2h","replicas":3,"gang":true,"pack":true},
	{"name":"eval","after":["train"],"command":"python3 eval.py --fast","resources":{"cpu":"500m","gpu":0.25}}]}`
	// Also the same document re-indented with tabs, as json.MarshalIndent
	// writes it.
	var v any
	if err := json.Unmarshal([]byte(compact), &v); err != nil {
		t.Fatal(err)
	}
	indented, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{"compact": compact, "indented": string(indented)} {
		t.Run(name, func(t *testing.T) {
			if got, want := mustParse(t, doc), fullJob(); !reflect.DeepEqual(got, want) {
				t.Fatalf("JSON parse mismatch\n got: %+v\nwant: %+v", got, want)
			}
		})
	}
}

func TestJobJSONRoundTrip(t *testing.T) {
	j := mustParse(t, fullSpec)
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"cpu_milli":8000`, `"share_milli":250`, `"estimate_ns":`, `"checkpoint_interval_ns":`, `"deadline":"2026-03-14T15:39:26Z"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s: %s", key, b)
		}
	}
	var back Job
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, j) {
		t.Fatalf("round trip mismatch\n got: %+v\nwant: %+v", &back, j)
	}
	if err := back.Validate(); err != nil {
		t.Fatalf("Validate after round trip: %v", err)
	}
	// A job without a deadline leaves the field out.
	j.Deadline = time.Time{}
	if b, _ := json.Marshal(j); strings.Contains(string(b), "deadline") {
		t.Errorf("zero deadline was marshalled: %s", b)
	}
}

func TestParseValueForms(t *testing.T) {
	const head = "name: j\ntasks:\n  - name: a\n    command: [x]\n"
	tests := []struct {
		name  string
		extra string
		check func(Task) bool
	}{
		{"cpu cores", "    resources: {cpu: 2.5}\n", func(t Task) bool { return t.Request.CPU == 2500 }},
		{"cpu millicores", "    resources: {cpu: 250m}\n", func(t Task) bool { return t.Request.CPU == 250 }},
		{"cpu string cores", "    resources: {cpu: \"4\"}\n", func(t Task) bool { return t.Request.CPU == 4000 }},
		{"cpu zero", "    resources: {cpu: 0}\n", func(t Task) bool { return t.Request.CPU == 0 }},
		{"memory bytes", "    resources: {memory: 4096}\n", func(t Task) bool { return t.Request.Memory == 4096 }},
		{"memory decimal", "    resources: {memory: 2GB}\n", func(t Task) bool { return t.Request.Memory == 2e9 }},
		{"gpu count", "    resources: {gpu: 2}\n", func(t Task) bool { return t.Request.GPU == resource.GPURequest{Count: 2} }},
		{"gpu count float", "    resources: {gpu: 1.0}\n", func(t Task) bool { return t.Request.GPU == resource.GPURequest{Count: 1} }},
		{"gpu share", "    resources: {gpu: 0.5}\n", func(t Task) bool { return t.Request.GPU == resource.GPURequest{Share: 500} }},
		{"gpu share map", "    resources: {gpu: {share: 0.125, memory: 8GiB, model: T4}}\n", func(t Task) bool {
			return t.Request.GPU == resource.GPURequest{Share: 125, Memory: 8 << 30, Model: "T4"}
		}},
		{"gpu zero", "    resources: {gpu: 0}\n", func(t Task) bool { return !t.Request.GPU.Wants() }},
		{"device default count", "    resources: {devices: [{kind: npu}]}\n", func(t Task) bool {
			return reflect.DeepEqual(t.Request.Devices, []resource.DeviceRequest{{Kind: "npu", Count: 1}})
		}},
		{"label key with slash", "    resources: {labels: {\"topology.io/zone\": \"a\"}}\n", func(t Task) bool { return t.Request.Labels["topology.io/zone"] == "a" }},
		{"empty env", "    env: {}\n", func(t Task) bool { return t.Env == nil }},
		{"empty after", "    after: []\n", func(t Task) bool { return t.After == nil }},
		{"explicit zero retries", "    retries: 0\n", func(t Task) bool { return t.Retries == 0 }},
		{"max retries", "    retries: 20\n", func(t Task) bool { return t.Retries == MaxRetries }},
		{"checkpoint minimum", "    checkpoint: {interval: 1s}\n", func(t Task) bool { return t.CheckpointInterval == time.Second }},
		{"gang unpacked", "    replicas: 4\n    gang: true\n    pack: false\n", func(t Task) bool { return t.Gang && !t.Pack && t.Replicas == 4 }},
		{"alias", "    resources: &r {cpu: 3}\n  - name: b\n    command: [y]\n    resources: *r\n", func(t Task) bool { return t.Request.CPU == 3000 }},
		{"quoted number string env", "    env: {N: \"010\"}\n", func(t Task) bool { return t.Env["N"] == "010" }},
		{"image", "    image: registry.local:5000/team/train:v3\n", func(t Task) bool {
			return t.Image == "registry.local:5000/team/train:v3" && t.ImageID == "" && t.Request.Labels[ContainerLabel] == "yes"
		}},
		{"image pinned", "    image: busybox@sha256:" + strings.Repeat("ab", 32) + "\n    image_id: sha256:" + strings.Repeat("cd", 32) + "\n", func(t Task) bool {
			return t.ImageID == "sha256:"+strings.Repeat("cd", 32)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := mustParse(t, head+tc.extra)
			if !tc.check(j.Tasks[0]) {
				t.Errorf("unexpected task: %+v", j.Tasks[0])
			}
		})
	}
}

func TestParseDeadline(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		{"30m", testNow.Add(30 * time.Minute)},
		{"\"1h30m\"", testNow.Add(90 * time.Minute)},
		{"2026-03-15T00:00:00Z", time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC)},
		{"\"2026-03-15T02:00:00+02:00\"", time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC)},
		{"2026-03-14T15:09:26.5Z", testNow.Add(500 * time.Millisecond)},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			j := mustParse(t, "name: d\ndeadline: "+tc.in+"\ntasks: [{name: a, command: [x]}]\n")
			if !j.Deadline.Equal(tc.want) || j.Deadline.Location() != time.UTC {
				t.Errorf("deadline = %v, want %v in UTC", j.Deadline, tc.want)
			}
		})
	}
	// A now carrying a monotonic reading and a zone still yields a plain
	// UTC deadline that survives a JSON round trip.
	now := time.Now().In(time.FixedZone("X", 3600))
	j, err := Parse([]byte("name: d\ndeadline: 1h\ntasks: [{name: a, command: [x]}]\n"), now)
	if err != nil {
		t.Fatal(err)
	}
	if j.Deadline != now.Round(0).Add(time.Hour).UTC() {
		t.Errorf("deadline %v not normalized", j.Deadline)
	}
}

func TestParseReturnsValidationError(t *testing.T) {
	for _, in := range []string{"", "name: [", "name: x\n", "- a\n- b\n", "a: 1\n---\nb: 2\n", "# only a comment\n", "~\n"} {
		_, err := Parse([]byte(in), testNow)
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Errors) == 0 {
			t.Errorf("Parse(%q) = %v, want a *ValidationError", in, err)
		}
	}
}

// TestLimitsAsked: a task asks its node to enforce the CPU and memory
// amounts its spec names, and nothing when it names neither (the default
// CPU request is no limit).
func TestLimitsAsked(t *testing.T) {
	cases := []struct {
		resources string
		want      resource.Limits
	}{
		{"", 0},
		{"resources: {disk: 1GiB}", 0},
		{"resources: {cpu: 2}", resource.LimitCPU},
		{"resources: {cpu: 0}", 0},
		{"resources: {memory: 64MiB}", resource.LimitMemory},
		{"resources: {cpu: 500m, memory: 1GiB}", resource.LimitCPU | resource.LimitMemory},
	}
	for _, c := range cases {
		j := mustParse(t, "name: l\ntasks:\n  - name: t\n    command: \"true\"\n    "+c.resources+"\n")
		if got := j.Tasks[0].Request.Limits; got != c.want {
			t.Errorf("%q: limits %v, want %v", c.resources, got, c.want)
		}
		b, err := Canonical(j)
		if err != nil {
			t.Fatal(err)
		}
		back, err := FromCanonical(b)
		if err != nil || back.Tasks[0].Request.Limits != c.want {
			t.Errorf("%q: canonical round trip: %v, %v", c.resources, back, err)
		}
	}
}
