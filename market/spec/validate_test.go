package spec

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
)

func TestValidateCodeBuiltJob(t *testing.T) {
	j := &Job{
		Name:     "cli-run",
		Type:     "cli-run",
		Priority: DefaultPriority,
		Tasks: []Task{{
			Name:     "main",
			Command:  []string{"./run.sh"},
			Request:  resource.Request{CPU: DefaultCPUMilli},
			Retries:  DefaultRetries,
			Replicas: DefaultReplicas,
		}},
	}
	if err := j.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := fullJob().Validate(); err != nil {
		t.Fatalf("Validate of the full example: %v", err)
	}
}

func TestValidateErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(j *Job)
		want   string
	}{
		{"no type", func(j *Job) { j.Type = "" }, "type: required"},
		{"bad utf-8 name", func(j *Job) { j.Name = "\xff" }, `name: "\xff" is not valid UTF-8`},
		{"priority", func(j *Job) { j.Priority = 11 }, "priority: 11 out of range 0..10"},
		{"no tasks", func(j *Job) { j.Tasks = nil }, "tasks: required: at least one task"},
		{"too many tasks", func(j *Job) { j.Tasks = make([]Task, MaxTasks+1) }, "tasks: 1001 tasks, over the limit of 1000"},
		{"zero replicas", func(j *Job) { j.Tasks[0].Replicas = 0 }, "tasks[0].replicas: 0 out of range 1..1000"},
		{"negative retries", func(j *Job) { j.Tasks[0].Retries = -1 }, "tasks[0].retries: -1 out of range 0..20"},
		{"empty command", func(j *Job) { j.Tasks[1].Command = nil }, "tasks[1].command: required"},
		{"nul argument", func(j *Job) { j.Tasks[1].Command = []string{"x", "a\x00"} }, "tasks[1].command[1]: contains a NUL byte"},
		{"too many args", func(j *Job) { j.Tasks[1].Command = make([]string, MaxCommandArgs+1) }, "tasks[1].command: 1025 arguments, over the limit of 1024"},
		{"reserved env", func(j *Job) { j.Tasks[1].Env = map[string]string{"AGORA_TASK": "x"} }, "tasks[1].env.AGORA_TASK: names starting with AGORA_ are reserved"},
		{"env nul", func(j *Job) { j.Tasks[1].Env = map[string]string{"A": "\x00"} }, "tasks[1].env.A: value contains a NUL byte"},
		{"negative cpu", func(j *Job) { j.Tasks[0].Request.CPU = -1 }, "tasks[0].resources.cpu: negative cpu amount -1m"},
		{"huge cpu", func(j *Job) { j.Tasks[0].Request.CPU = MaxCPUMilli + 1 }, "tasks[0].resources.cpu: 65536001m is over the limit"},
		{"negative memory", func(j *Job) { j.Tasks[0].Request.Memory = -1 }, "tasks[0].resources.memory: negative size -1"},
		{"negative disk", func(j *Job) { j.Tasks[0].Request.Disk = -1 }, "tasks[0].resources.disk: negative size -1"},
		{"unknown limit", func(j *Job) { j.Tasks[0].Request.Limits = resource.LimitPids }, "tasks[0].resources.limits: unknown limits 0x4"},
		{"memory limit without memory", func(j *Job) { j.Tasks[2].Request.Limits = resource.LimitMemory }, "tasks[2].resources.limits: asks for a memory limit without a memory amount"},
		{"cpu limit without cpu", func(j *Job) { j.Tasks[0].Request.CPU = 0 }, "tasks[0].resources.limits: asks for a cpu limit without a cpu amount"},
		{"gpu count", func(j *Job) { j.Tasks[1].Request.GPU.Count = 65 }, "tasks[1].resources.gpu.count: 65 out of range 0..64"},
		{"gpu share whole", func(j *Job) { j.Tasks[2].Request.GPU.Share = 1000 }, "tasks[2].resources.gpu.share: 1000 thousandths out of range 1..999"},
		{"gpu count and share", func(j *Job) { j.Tasks[2].Request.GPU.Count = 1 }, "tasks[2].resources.gpu: count and share are exclusive"},
		{"gpu model alone", func(j *Job) { j.Tasks[0].Request.GPU.Model = "A100" }, "tasks[0].resources.gpu: memory or model given without a count or share"},
		{"device count", func(j *Job) { j.Tasks[1].Request.Devices[0].Count = 0 }, "tasks[1].resources.devices[0].count: 0 out of range 1..64"},
		{"label key", func(j *Job) { j.Tasks[1].Request.Labels = map[string]string{"a b": "x"} }, `tasks[1].resources.labels["a b"]: invalid label key`},
		{"negative estimate", func(j *Job) { j.Tasks[1].Estimate = -time.Second }, "tasks[1].estimate: -1s must be positive"},
		{"long timeout", func(j *Job) { j.Tasks[1].Timeout = MaxDuration + 1 }, "tasks[1].timeout: 8784h0m0.000000001s is over the limit"},
		{"short checkpoint", func(j *Job) { j.Tasks[1].CheckpointInterval = time.Millisecond }, "tasks[1].checkpoint.interval: 1ms is shorter than the minimum of 1s"},
		{"gang of one", func(j *Job) { j.Tasks[1].Replicas = 1 }, "tasks[1].gang: needs replicas > 1"},
		{"pack alone", func(j *Job) { j.Tasks[1].Gang = false }, "tasks[1].pack: only applies to a gang"},
		{"image upper case", func(j *Job) { j.Tasks[0].Image = "Busybox"; j.Tasks[0].RequireContainer() }, `tasks[0].image: "Busybox" is not an image reference`},
		{"image space", func(j *Job) { j.Tasks[0].Image = "busy box"; j.Tasks[0].RequireContainer() }, `tasks[0].image: "busy box" is not an image reference`},
		{"image bad digest", func(j *Job) { j.Tasks[0].Image = "busybox@sha256:12"; j.Tasks[0].RequireContainer() }, `tasks[0].image: "busybox@sha256:12" is not an image reference`},
		{"image too long", func(j *Job) { j.Tasks[0].Image = strings.Repeat("a", MaxImageRefLen+1); j.Tasks[0].RequireContainer() }, "tasks[0].image: 513 characters, over the limit of 512"},
		{"image without label", func(j *Job) { j.Tasks[0].Image = "busybox" }, "tasks[0].resources.labels.agora.container: an image task requires its node's label agora.container=yes"},
		{"image id form", func(j *Job) {
			j.Tasks[0].Image, j.Tasks[0].ImageID = "busybox", "sha256:XY"
			j.Tasks[0].RequireContainer()
		}, `tasks[0].image_id: "sha256:XY" is not sha256: and 64 lower-case hex digits`},
		{"image size alone", func(j *Job) { j.Tasks[0].ImageSize = 10 }, "tasks[0].image_size: set without an image"},
		{"image size negative", func(j *Job) {
			j.Tasks[0].Image, j.Tasks[0].ImageSize = "busybox", -1
			j.Tasks[0].RequireContainer()
		}, "tasks[0].image_size: -1 bytes: want 0 to 1099511627776 (1 TiB)"},
		{"image id alone", func(j *Job) { j.Tasks[0].ImageID = "sha256:" + strings.Repeat("a", 64) }, "tasks[0].image_id: set without an image"},
		{"dot name", func(j *Job) { j.Tasks[0].Name = "." }, `tasks[0].name: invalid task name "."`},
		{"unknown after", func(j *Job) { j.Tasks[2].After = []string{"nope"} }, `tasks[2].after: unknown task "nope"`},
		{"empty after", func(j *Job) { j.Tasks[2].After = []string{""} }, "tasks[2].after: empty task name"},
		{"cycle", func(j *Job) { j.Tasks[0].After = []string{"eval"} }, "tasks: dependency cycle: prep -> train -> eval -> prep"},
		{"job text", func(j *Job) {
			for i := range j.Tasks {
				j.Tasks[i].Command = []string{strings.Repeat("x", MaxCommandBytes)}
			}
			for i := 3; i < 40; i++ {
				j.Tasks = append(j.Tasks, Task{Name: "t" + strings.Repeat("x", i), Command: j.Tasks[0].Command, Retries: 1, Replicas: 1})
			}
		}, "tasks: the job holds 5243"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := fullJob()
			tc.mutate(j)
			err := j.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want a *ValidationError", err)
			}
			if !hasLine(err, tc.want) {
				t.Errorf("no error line starts with %q; got:\n%v", tc.want, err)
			}
			for _, fe := range ve.Errors {
				if fe.Line != 0 {
					t.Errorf("a Job built in code has no lines, got %+v", fe)
				}
			}
		})
	}
}

func TestValidateNil(t *testing.T) {
	var j *Job
	if err := j.Validate(); err == nil {
		t.Fatal("Validate of a nil job succeeded")
	}
}

func TestFieldErrorString(t *testing.T) {
	tests := []struct {
		e    FieldError
		want string
	}{
		{FieldError{Path: "priority", Msg: "11 out of range 0..10"}, "priority: 11 out of range 0..10"},
		{FieldError{Path: "tasks[0].comand", Msg: "unknown field", Line: 7}, "tasks[0].comand: unknown field (line 7)"},
		{FieldError{Msg: "spec is empty"}, "spec is empty"},
	}
	for _, tc := range tests {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}
