package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// parseErrors parses spec and returns its problems, failing if there are none.
func parseErrors(t *testing.T, spec string) *ValidationError {
	t.Helper()
	j, err := Parse([]byte(spec), testNow)
	if err == nil {
		t.Fatalf("Parse accepted an invalid spec, giving %+v", j)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Parse error %T is not a *ValidationError: %v", err, err)
	}
	return ve
}

// hasLine reports whether the error prints a line that starts with want.
func hasLine(err error, want string) bool {
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.HasPrefix(line, want) {
			return true
		}
	}
	return false
}

func TestParseErrors(t *testing.T) {
	// task wraps task fields into a valid job whose first task is "a".
	task := func(fields string) string {
		return "name: j\ntasks:\n  - name: a\n" + fields
	}
	const cmd = "    command: [x]\n"
	tests := []struct {
		name string
		spec string
		want string // the start of one line of the error
	}{
		// Job fields.
		{"missing name", "tasks: [{name: a, command: [x]}]\n", "name: required"},
		{"empty name", "name: ''\ntasks: [{name: a, command: [x]}]\n", "name: required"},
		{"long name", "name: " + strings.Repeat("n", MaxJobNameLen+1) + "\ntasks: [{name: a, command: [x]}]\n", "name: 129 characters, over the limit of 128"},
		{"control char in name", "name: \"a\\tb\"\ntasks: [{name: a, command: [x]}]\n", "name: \"a\\tb\" contains the non-printable character U+0009"},
		{"name not a string", "name: [a]\ntasks: [{name: a, command: [x]}]\n", "name: must be a string, got a list"},
		{"empty type", "name: j\ntype: ''\ntasks: [{name: a, command: [x]}]\n", "type: required"},
		{"priority high", "name: j\npriority: 11\ntasks: [{name: a, command: [x]}]\n", "priority: 11 out of range 0..10"},
		{"priority negative", "name: j\npriority: -1\ntasks: [{name: a, command: [x]}]\n", "priority: -1 out of range 0..10"},
		{"priority fraction", "name: j\npriority: 2.5\ntasks: [{name: a, command: [x]}]\n", "priority: must be a whole number, got the number 2.5"},
		{"priority huge", "name: j\npriority: 99999999999\ntasks: [{name: a, command: [x]}]\n", "priority: \"99999999999\" is out of range"},
		{"deadline word", "name: j\ndeadline: yesterday\ntasks: [{name: a, command: [x]}]\n", `deadline: "yesterday" is neither a duration nor an RFC 3339 time`},
		{"deadline past", "name: j\ndeadline: 2020-01-01T00:00:00Z\ntasks: [{name: a, command: [x]}]\n", "deadline: 2020-01-01T00:00:00Z is not in the future"},
		{"deadline now", "name: j\ndeadline: 2026-03-14T15:09:26Z\ntasks: [{name: a, command: [x]}]\n", "deadline: 2026-03-14T15:09:26Z is not in the future"},
		{"deadline negative", "name: j\ndeadline: -5m\ntasks: [{name: a, command: [x]}]\n", `deadline: "-5m" must be greater than zero`},
		{"deadline too far", "name: j\ndeadline: 9000h\ntasks: [{name: a, command: [x]}]\n", `deadline: "9000h" is more than`},
		{"deadline number", "name: j\ndeadline: 30\ntasks: [{name: a, command: [x]}]\n", "deadline: must be a duration such as 30m or an RFC 3339 time"},
		{"missing tasks", "name: j\n", "tasks: required: at least one task"},
		{"empty tasks", "name: j\ntasks: []\n", "tasks: required: at least one task"},
		{"tasks not a list", "name: j\ntasks: {a: 1}\n", "tasks: must be a list, got a mapping"},
		{"task not a mapping", "name: j\ntasks: [x]\n", `tasks[0]: must be a mapping, got the string "x"`},
		{"spec not a mapping", "- a\n", "must be a mapping, got a list"},
		{"bad yaml", "name: [\n", "invalid YAML or JSON"},
		{"two documents", "name: j\n---\nname: k\n", "spec must hold exactly one YAML document"},
		{"empty spec", "\n# nothing\n", "spec is empty"},

		// Unknown, duplicate and odd keys.
		{"unknown top field", "name: j\nnmae: k\ntasks: [{name: a, command: [x]}]\n", `nmae: unknown field (did you mean "name"?)`},
		{"unknown task field", task("    comand: [x]\n"), `tasks[0].comand: unknown field (did you mean "command"?)`},
		{"wrong case field", task(cmd + "    Retries: 2\n"), `tasks[0].Retries: unknown field (did you mean "retries"?)`},
		{"unknown resources field", task(cmd + "    resources: {gpus: 1}\n"), `tasks[0].resources.gpus: unknown field (did you mean "gpu"?)`},
		{"unknown gpu field", task(cmd + "    resources: {gpu: {cnt: 1}}\n"), "tasks[0].resources.gpu.cnt: unknown field"},
		{"unknown device field", task(cmd + "    resources: {devices: [{kind: x, modle: y}]}\n"), "tasks[0].resources.devices[0].modle: unknown field"},
		{"unknown checkpoint field", task(cmd + "    checkpoint: {every: 1s}\n"), "tasks[0].checkpoint.every: unknown field"},
		{"duplicate key", task(cmd + "    retries: 1\n    retries: 2\n"), "tasks[0].retries: duplicate key (first at line 5)"},
		{"merge key", "name: j\ntasks:\n  - &t {name: a, command: [x]}\n  - <<: *t\n    name: b\n", `tasks[1]["<<"]: merge keys (<<) are not supported`},
		{"odd key", task(cmd + "    env: {\"A B\": x}\n"), `tasks[0].env["A B"]: invalid variable name "A B"`},

		// Task names and dependencies.
		{"missing task name", "name: j\ntasks: [{command: [x]}]\n", "tasks[0].name: required"},
		{"bad task name", "name: j\ntasks: [{name: 'a b', command: [x]}]\n", `tasks[0].name: invalid task name "a b"`},
		{"dot task name", "name: j\ntasks: [{name: '..', command: [x]}]\n", `tasks[0].name: invalid task name ".."`},
		{"long task name", "name: j\ntasks: [{name: " + strings.Repeat("t", MaxTaskNameLen+1) + ", command: [x]}]\n", "tasks[0].name: invalid task name"},
		{"duplicate task name", "name: j\ntasks: [{name: x, command: [x]}, {name: x, command: [x]}]\n", `tasks[1].name: duplicate task name "x" (first used by tasks[0])`},
		{"unknown dependency", task(cmd + "    after: [foo]\n"), `tasks[0].after: unknown task "foo"`},
		{"self dependency", task(cmd + "    after: [a]\n"), `tasks[0].after: task "a" depends on itself`},
		{"repeated dependency", "name: j\ntasks: [{name: a, command: [x]}, {name: b, command: [x], after: [a, a]}]\n", `tasks[1].after: duplicate dependency "a"`},
		{"after not a list", task(cmd + "    after: a\n"), `tasks[0].after: must be a list, got the string "a"`},
		{"after element", task(cmd + "    after: [[b]]\n"), "tasks[0].after[0]: must be a string, got a list"},
		{"cycle", "name: j\ntasks: [{name: a, command: [x], after: [b]}, {name: b, command: [x], after: [a]}]\n", "tasks: dependency cycle: a -> b -> a"},

		// Commands and environment.
		{"missing command", task(""), "tasks[0].command: required"},
		{"empty command list", task("    command: []\n"), "tasks[0].command: required"},
		{"empty command string", task("    command: ''\n"), "tasks[0].command: empty command"},
		{"empty program", task("    command: ['', x]\n"), "tasks[0].command[0]: empty program name"},
		{"nul in argument", task("    command: [x, \"a\\0b\"]\n"), "tasks[0].command[1]: contains a NUL byte"},
		{"number argument", task("    command: [sleep, 10]\n"), `tasks[0].command[1]: must be a string, got the number 10 (quote it: "10")`},
		{"command mapping", task("    command: {x: 1}\n"), "tasks[0].command: must be a list of arguments or a shell command string"},
		{"env not a map", task(cmd + "    env: [A]\n"), "tasks[0].env: must be a mapping, got a list"},
		{"env number value", task(cmd + "    env: {EPOCHS: 10}\n"), `tasks[0].env.EPOCHS: must be a string, got the number 10 (quote it: "10")`},
		{"env null value", task(cmd + "    env: {EPOCHS: ~}\n"), "tasks[0].env.EPOCHS: must be a string, got null"},
		{"env bad name", task(cmd + "    env: {1X: a}\n"), `tasks[0].env.1X: invalid variable name "1X"`},
		{"env reserved", task(cmd + "    env: {AGORA_NODE: a}\n"), "tasks[0].env.AGORA_NODE: names starting with AGORA_ are reserved"},
		{"env reserved lower case", task(cmd + "    env: {agora_x: a}\n"), "tasks[0].env.agora_x: names starting with AGORA_ are reserved"},

		// Resources.
		{"negative cpu", task(cmd + "    resources: {cpu: -1}\n"), "tasks[0].resources.cpu: negative cpu amount -1"},
		{"negative cpu string", task(cmd + "    resources: {cpu: -500m}\n"), `tasks[0].resources.cpu: negative cpu amount "-500m"`},
		{"bad cpu", task(cmd + "    resources: {cpu: lots}\n"), `tasks[0].resources.cpu: invalid cpu amount "lots"`},
		{"huge cpu", task(cmd + "    resources: {cpu: 1e9}\n"), "tasks[0].resources.cpu: 1e9 cores is over the limit"},
		{"cpu list", task(cmd + "    resources: {cpu: [1]}\n"), "tasks[0].resources.cpu: must be a number of cores"},
		{"negative memory", task(cmd + "    resources: {memory: -1GiB}\n"), `tasks[0].resources.memory: negative size "-1GiB"`},
		{"negative memory number", task(cmd + "    resources: {memory: -5}\n"), `tasks[0].resources.memory: negative size "-5"`},
		{"bad memory", task(cmd + "    resources: {memory: abc}\n"), `tasks[0].resources.memory: invalid size "abc"`},
		{"huge memory", task(cmd + "    resources: {memory: 2PiB}\n"), "tasks[0].resources.memory: 2PiB is over the limit of 1PiB"},
		{"bad disk", task(cmd + "    resources: {disk: 1XB}\n"), `tasks[0].resources.disk: invalid size "1XB"`},
		{"bad gpu memory", task(cmd + "    resources: {gpu: {count: 1, memory: abc}}\n"), `tasks[0].resources.gpu.memory: invalid size "abc"`},
		{"negative gpu", task(cmd + "    resources: {gpu: -1}\n"), "tasks[0].resources.gpu: negative GPU count -1"},
		{"too many gpus", task(cmd + "    resources: {gpu: 65}\n"), "tasks[0].resources.gpu: 65 GPUs is over the limit of 64"},
		{"gpu count high", task(cmd + "    resources: {gpu: {count: 65}}\n"), "tasks[0].resources.gpu.count: 65 out of range 0..64"},
		{"gpu count negative", task(cmd + "    resources: {gpu: {count: -1}}\n"), "tasks[0].resources.gpu.count: -1 out of range 0..64"},
		{"gpu fraction above one", task(cmd + "    resources: {gpu: 1.5}\n"), "tasks[0].resources.gpu: 1.5 GPUs: use a whole number"},
		{"gpu share one", task(cmd + "    resources: {gpu: {share: 1}}\n"), "tasks[0].resources.gpu.share: share 1 out of range"},
		{"gpu share zero", task(cmd + "    resources: {gpu: {share: 0}}\n"), "tasks[0].resources.gpu.share: share 0 out of range"},
		{"gpu share tiny", task(cmd + "    resources: {gpu: 0.0001}\n"), "tasks[0].resources.gpu: share 0.0001 out of range"},
		{"gpu share nearly one", task(cmd + "    resources: {gpu: 0.9999}\n"), "tasks[0].resources.gpu: share 0.9999 out of range"},
		{"gpu share string", task(cmd + "    resources: {gpu: {share: half}}\n"), `tasks[0].resources.gpu.share: must be a number, got the string "half"`},
		{"gpu count and share", task(cmd + "    resources: {gpu: {count: 2, share: 0.5}}\n"), "tasks[0].resources.gpu: count and share are exclusive"},
		{"gpu memory alone", task(cmd + "    resources: {gpu: {memory: 8GiB}}\n"), "tasks[0].resources.gpu: memory or model given without a count or share"},
		{"gpu string", task(cmd + "    resources: {gpu: one}\n"), "tasks[0].resources.gpu: must be a GPU count"},
		{"device kind missing", task(cmd + "    resources: {devices: [{count: 1}]}\n"), "tasks[0].resources.devices[0].kind: required"},
		{"device kind bad", task(cmd + "    resources: {devices: [{kind: 'f p'}]}\n"), `tasks[0].resources.devices[0].kind: invalid device kind "f p"`},
		{"device count", task(cmd + "    resources: {devices: [{kind: fpga, count: 0}]}\n"), "tasks[0].resources.devices[0].count: 0 out of range 1..64"},
		{"device duplicate", task(cmd + "    resources: {devices: [{kind: fpga}, {kind: FPGA}]}\n"), "tasks[0].resources.devices[1]: duplicate device request"},
		{"label bad key", task(cmd + "    resources: {labels: {'-x': a}}\n"), `tasks[0].resources.labels.-x: invalid label key "-x"`},
		{"label quoted key", task(cmd + "    resources: {labels: {'a b': x}}\n"), `tasks[0].resources.labels["a b"]: invalid label key "a b"`},
		{"label number value", task(cmd + "    resources: {labels: {rack: 3}}\n"), "tasks[0].resources.labels.rack: must be a string"},
		{"site control", task(cmd + "    resources: {site: \"a\\nb\"}\n"), "tasks[0].resources.site: \"a\\nb\" contains the non-printable character"},

		// Durations, counts and flags.
		{"estimate zero", task(cmd + "    estimate: 0s\n"), `tasks[0].estimate: "0s" must be greater than zero`},
		{"estimate bad", task(cmd + "    estimate: soon\n"), `tasks[0].estimate: invalid duration "soon"`},
		{"estimate number", task(cmd + "    estimate: 3600\n"), "tasks[0].estimate: must be a duration such as 90s"},
		{"estimate too long", task(cmd + "    estimate: 9000h\n"), "tasks[0].estimate: 9000h0m0s is over the limit"},
		{"timeout zero", task(cmd + "    timeout: 0s\n"), `tasks[0].timeout: "0s" must be greater than zero`},
		{"timeout negative", task(cmd + "    timeout: -1h\n"), `tasks[0].timeout: "-1h" must be greater than zero`},
		{"checkpoint short", task(cmd + "    checkpoint: {interval: 500ms}\n"), "tasks[0].checkpoint.interval: 500ms is shorter than the minimum of 1s"},
		{"checkpoint no interval", task(cmd + "    checkpoint: {}\n"), "tasks[0].checkpoint.interval: required when checkpoint is set"},
		{"checkpoint not a map", task(cmd + "    checkpoint: 60s\n"), "tasks[0].checkpoint: must be a mapping"},
		{"retries high", task(cmd + "    retries: 21\n"), "tasks[0].retries: 21 out of range 0..20"},
		{"retries negative", task(cmd + "    retries: -1\n"), "tasks[0].retries: -1 out of range 0..20"},
		{"retries string", task(cmd + "    retries: three\n"), "tasks[0].retries: must be a whole number"},
		{"replicas zero", task(cmd + "    replicas: 0\n"), "tasks[0].replicas: 0 out of range 1..1000"},
		{"replicas high", task(cmd + "    replicas: 1001\n"), "tasks[0].replicas: 1001 out of range 1..1000"},
		{"gang alone", task(cmd + "    gang: true\n"), "tasks[0].gang: needs replicas > 1"},
		{"pack without gang", task(cmd + "    replicas: 2\n    pack: true\n"), "tasks[0].pack: only applies to a gang"},
		{"gang yes", task(cmd + "    gang: yes\n"), `tasks[0].gang: must be true or false, got the string "yes"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ve := parseErrors(t, tc.spec)
			if !hasLine(ve, tc.want) {
				t.Errorf("no error line starts with %q; got:\n%v", tc.want, ve)
			}
		})
	}
}

func TestParseErrorsCollectsAll(t *testing.T) {
	spec := `name: j
priority: 11
tasks:
  - name: a
    command: [x]
    retries: 99
    resources: {gpu: {memory: abc, count: 1}}
  - name: b
    comand: [x]
    after: [zzz]
`
	ve := parseErrors(t, spec)
	want := []FieldError{
		{Path: "priority", Msg: "11 out of range 0..10", Line: 2},
		{Path: "tasks[0].retries", Msg: "99 out of range 0..20", Line: 6},
		{Path: "tasks[0].resources.gpu.memory", Msg: `invalid size "abc" (want e.g. 512MiB, 40GiB or a byte count)`, Line: 7},
		{Path: "tasks[1].command", Msg: "required: a non-empty list of arguments, or a shell command string", Line: 8},
		{Path: "tasks[1].comand", Msg: `unknown field (did you mean "command"?)`, Line: 9},
		{Path: "tasks[1].after", Msg: `unknown task "zzz"`, Line: 10},
	}
	if fmt.Sprint(ve.Errors) != fmt.Sprint(want) {
		t.Errorf("errors:\n got %v\nwant %v", ve.Errors, want)
	}
	if got := strings.Count(ve.Error(), "\n") + 1; got != len(want) {
		t.Errorf("Error() has %d lines, want %d:\n%v", got, len(want), ve)
	}
	if !strings.HasPrefix(ve.Error(), "priority: 11 out of range 0..10 (line 2)\n") {
		t.Errorf("Error() format: %q", ve.Error())
	}
}

func TestParseErrorsNotRepeated(t *testing.T) {
	if ve := parseErrors(t, "tasks: [{name: a, command: [x]}]\n"); len(ve.Errors) != 1 {
		t.Errorf("a missing name gave more than one error:\n%v", ve)
	}
	// A value that fails to decode is reported once, not again by the
	// model checks that follow.
	ve := parseErrors(t, "name: j\ntasks:\n  - name: a\n    command: [10]\n    resources: {gpu: {share: 2, memory: 1GiB}}\n")
	if len(ve.Errors) != 2 {
		t.Errorf("want 2 errors, got:\n%v", ve)
	}
}

func TestParseErrorLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: j\ntasks:\n  - name: a\n    command: [x]\n")
	for i := range 3 * MaxErrors {
		fmt.Fprintf(&b, "    bogus%d: 1\n", i)
	}
	ve := parseErrors(t, b.String())
	if len(ve.Errors) != MaxErrors || !ve.Truncated {
		t.Fatalf("got %d errors (truncated %v), want %d truncated", len(ve.Errors), ve.Truncated, MaxErrors)
	}
	if !strings.HasSuffix(ve.Error(), "(too many errors: only the first 20 are shown)") {
		t.Errorf("Error() does not say it is truncated:\n%v", ve)
	}
}

func TestErrorMessagesStayOnOneLine(t *testing.T) {
	// User strings in messages and paths are quoted, so a newline in them
	// cannot split an error across lines.
	spec := "name: j\ntasks:\n  - name: \"a\\nb\"\n    command: [x]\n    after: [\"c\\nd\"]\n    env: {\"X\\nY\": z}\n"
	ve := parseErrors(t, spec)
	if n := strings.Count(ve.Error(), "\n") + 1; n != len(ve.Errors) {
		t.Errorf("%d errors printed on %d lines:\n%v", len(ve.Errors), n, ve)
	}
}
