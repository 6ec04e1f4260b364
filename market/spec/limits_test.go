package spec

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// manyTasks is a spec of n independent tasks.
func manyTasks(n int) string {
	var b strings.Builder
	b.WriteString("name: many\ntasks:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: t%d, command: [x]}\n", i)
	}
	return b.String()
}

// list renders n YAML flow-list items made by item.
func list(n int, item func(i int) string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = item(i)
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// mapping renders n YAML flow-mapping entries made by entry.
func mapping(n int, entry func(i int) string) string {
	return "{" + strings.TrimSuffix(strings.TrimPrefix(list(n, entry), "["), "]") + "}"
}

func TestLimits(t *testing.T) {
	task := func(fields string) string {
		return "name: j\ntasks:\n  - name: a\n" + fields
	}
	arg := func(int) string { return "a" }
	tests := []struct {
		name string
		spec string
		want string // "" for a spec at the limit, which must parse
	}{
		{"max tasks", manyTasks(MaxTasks), ""},
		{"max tasks + 1", manyTasks(MaxTasks + 1), "tasks: 1001 tasks, over the limit of 1000"},
		{"max job replicas", "name: j\ntasks:\n  - {name: a, command: [x], replicas: 250}\n  - {name: b, command: [x], replicas: 250}\n  - {name: c, command: [x], replicas: 250}\n  - {name: d, command: [x], replicas: 250}\n", ""},
		{"max job replicas + 1", "name: j\ntasks:\n  - {name: a, command: [x], replicas: 250}\n  - {name: b, command: [x], replicas: 250}\n  - {name: c, command: [x], replicas: 250}\n  - {name: d, command: [x], replicas: 250}\n  - {name: e, command: [x]}\n", "tasks: 1001 task replicas in all, over the limit of 1000 per job (split the job)"},
		{"max job name", "name: " + strings.Repeat("é", MaxJobNameLen) + "\ntasks: [{name: a, command: [x]}]\n", ""},
		{"max type", "name: j\ntype: " + strings.Repeat("t", MaxTypeLen+1) + "\ntasks: [{name: a, command: [x]}]\n", "type: 129 characters, over the limit of 128"},
		{"max task name", "name: j\ntasks: [{name: " + strings.Repeat("t", MaxTaskNameLen) + ", command: [x]}]\n", ""},
		{"priority bounds", "name: j\npriority: 0\ntasks: [{name: a, command: [x]}]\n", ""},
		{"max args", task("    command: " + list(MaxCommandArgs, arg) + "\n"), ""},
		{"max args + 1", task("    command: " + list(MaxCommandArgs+1, arg) + "\n"), "tasks[0].command: 1025 arguments, over the limit of 1024"},
		{"max command bytes", task("    command: [" + strings.Repeat("c", MaxCommandBytes) + "]\n"), ""},
		{"max command bytes + 1", task("    command: [" + strings.Repeat("c", MaxCommandBytes) + ", x]\n"), "tasks[0].command: 131073 bytes of arguments, over the limit of 131072"},
		{"max env", task("    command: [x]\n    env: " + mapping(MaxEnvEntries, func(i int) string { return fmt.Sprintf("V%d: x", i) }) + "\n"), ""},
		{"max env + 1", task("    command: [x]\n    env: " + mapping(MaxEnvEntries+1, func(i int) string { return fmt.Sprintf("V%d: x", i) }) + "\n"), "tasks[0].env: 257 variables, over the limit of 256"},
		{"env bytes", task("    command: [x]\n    env: {A: " + strings.Repeat("v", MaxEnvBytes) + "}\n"), "tasks[0].env: 65539 bytes of variables, over the limit of 65536"},
		{"env name length", task("    command: [x]\n    env: {" + strings.Repeat("N", MaxEnvNameLen+1) + ": x}\n"), "tasks[0].env[\"NNNN"},
		{"max gpus", task("    command: [x]\n    resources: {gpu: 64}\n"), ""},
		{"max devices", task("    command: [x]\n    resources: {devices: " + list(MaxDevices, func(i int) string { return fmt.Sprintf("{kind: k%d}", i) }) + "}\n"), ""},
		{"max devices + 1", task("    command: [x]\n    resources: {devices: " + list(MaxDevices+1, func(i int) string { return fmt.Sprintf("{kind: k%d}", i) }) + "}\n"), "tasks[0].resources.devices: 17 device requests, over the limit of 16"},
		{"max labels", task("    command: [x]\n    resources: {labels: " + mapping(MaxLabels, func(i int) string { return fmt.Sprintf("l%d: x", i) }) + "}\n"), ""},
		{"max labels + 1", task("    command: [x]\n    resources: {labels: " + mapping(MaxLabels+1, func(i int) string { return fmt.Sprintf("l%d: x", i) }) + "}\n"), "tasks[0].resources.labels: 65 labels, over the limit of 64"},
		{"max replicas", task("    command: [x]\n    replicas: 256\n    gang: true\n    pack: true\n"), ""},
		{"max duration", task("    command: [x]\n    timeout: 8784h\n"), ""},
		{"max cpu", task("    command: [x]\n    resources: {cpu: 65536}\n"), ""},
		{"max cpu + 1m", task("    command: [x]\n    resources: {cpu: 65536001m}\n"), "tasks[0].resources.cpu: 65536001m is over the limit of 65536 cores"},
		{"max memory", task("    command: [x]\n    resources: {memory: 1PiB}\n"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				mustParse(t, tc.spec)
				return
			}
			if ve := parseErrors(t, tc.spec); !hasLine(ve, tc.want) {
				t.Errorf("no error line starts with %q; got:\n%v", tc.want, ve)
			}
		})
	}
}

func TestMaxTasksChain(t *testing.T) {
	// The longest job is also the deepest: a chain of MaxTasks tasks.
	var b strings.Builder
	b.WriteString("name: chain\ntasks:\n  - {name: t0, command: [x]}\n")
	for i := 1; i < MaxTasks; i++ {
		fmt.Fprintf(&b, "  - {name: t%d, command: [x], after: [t%d]}\n", i, i-1)
	}
	j := mustParse(t, b.String())
	order, err := j.TopoOrder()
	if err != nil || len(order) != MaxTasks || order[MaxTasks-1] != "t999" {
		t.Fatalf("TopoOrder: %v (%d tasks)", err, len(order))
	}
}

func TestSpecSizeLimit(t *testing.T) {
	base := "name: j\ntasks: [{name: a, command: [x]}]\n#"
	pad := func(size int) []byte {
		return []byte(base + strings.Repeat("p", size-len(base)))
	}
	if _, err := Parse(pad(MaxSpecBytes), testNow); err != nil {
		t.Errorf("a spec of exactly MaxSpecBytes was rejected: %v", err)
	}
	_, err := Parse(pad(MaxSpecBytes+1), testNow)
	if err == nil || err.Error() != "spec is 1048577 bytes, over the limit of 1048576" {
		t.Errorf("oversized spec: %v", err)
	}
	// The size is checked before anything is parsed.
	garbage := append([]byte("name: [\n"), make([]byte, MaxSpecBytes)...)
	if _, err := Parse(garbage, testNow); err == nil || !strings.HasPrefix(err.Error(), "spec is ") {
		t.Errorf("oversized garbage: %v", err)
	}
}

func TestAliasAmplificationIsBounded(t *testing.T) {
	// Aliases let a small spec name the same large node many times. Per
	// field limits and the error cap keep the work bounded.
	tests := []struct {
		name string
		spec string
	}{
		{"many unknown fields", "name: j\ntasks:\n  - &t " + mapping(5000, func(i int) string { return fmt.Sprintf("k%d: 1", i) }) +
			"\n" + strings.Repeat("  - *t\n", MaxTasks-1)},
		{"long command", "name: j\nx: &c " + list(MaxCommandArgs+1, func(int) string { return "a" }) +
			"\ntasks:\n" + strings.Repeat("  - {name: a, command: *c}\n", MaxTasks)},
		{"many tasks", "name: j\ntasks: &l " + list(MaxTasks+1, func(int) string { return "{}" }) + "\n"},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "name: j\ntasks:\n  - {name: t0, command: &c %s, env: &e %s}\n",
		list(MaxCommandArgs, func(int) string { return "aaaaaaa" }),
		mapping(MaxEnvEntries, func(i int) string { return fmt.Sprintf("V%d: x", i) }))
	for i := 1; i < MaxTasks; i++ {
		fmt.Fprintf(&b, "  - {name: t%d, command: *c, env: *e}\n", i)
	}
	tests = append(tests, struct{ name, spec string }{"aliased text", b.String()})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			ve := parseErrors(t, tc.spec)
			if tc.name == "aliased text" && !strings.Contains(ve.Error(), "the job holds more than 4194304 bytes of text once aliases are expanded") {
				t.Errorf("aliased text: %v", ve)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Parse took %v", d)
			}
		})
	}
}
