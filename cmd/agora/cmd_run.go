package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/spec"
)

func init() {
	register("run", "run one command as a single-task job", cmdRun)
}

// runSpec is the one-task job spec that agora run builds, in the field
// order of a hand-written spec.
type runSpec struct {
	Name     string    `json:"name"`
	Type     string    `json:"type"`
	Priority int       `json:"priority"`
	Tasks    []runTask `json:"tasks"`
}

type runTask struct {
	Name      string       `json:"name"`
	Command   []string     `json:"command"`
	Resources runResources `json:"resources"`
	Retries   *int         `json:"retries,omitempty"`
	Timeout   string       `json:"timeout,omitempty"`
	Image     string       `json:"image,omitempty"`
	Array     string       `json:"array,omitempty"`
	Values    []string     `json:"array_values,omitempty"`
}

type runResources struct {
	CPU    any     `json:"cpu,omitempty"` // cores as a number, or a string such as "500m"; nil: the spec's default, no limit asked
	Memory string  `json:"memory,omitempty"`
	GPU    *runGPU `json:"gpu,omitempty"`
}

type runGPU struct {
	Count  int     `json:"count,omitempty"`
	Share  float64 `json:"share,omitempty"`
	Memory string  `json:"memory,omitempty"`
	Model  string  `json:"model,omitempty"`
}

// runFlagOf names the flag behind each spec field agora run fills in, so
// that a problem spec.Parse finds is reported against the flag.
var runFlagOf = map[string]string{
	"name":                          "--name",
	"type":                          "--type",
	"priority":                      "--priority",
	"tasks[0].command":              "command",
	"tasks[0].resources.cpu":        "--cpu",
	"tasks[0].resources.memory":     "--mem",
	"tasks[0].resources.gpu":        "--gpu",
	"tasks[0].resources.gpu.count":  "--gpu",
	"tasks[0].resources.gpu.share":  "--gpu",
	"tasks[0].resources.gpu.memory": "--gpu-mem",
	"tasks[0].resources.gpu.model":  "--gpu-model",
	"tasks[0].retries":              "--retries",
	"tasks[0].timeout":              "--timeout",
	"tasks[0].image":                "--image",
	"tasks[0].image_id":             "--image",
	"tasks[0].array":                "--array",
	"tasks[0].array_values":         "--array-values",
}

// runOpts are agora run's flags.
type runOpts struct {
	cpu, mem, gpu, gpuMem, gpuModel string
	name, typ, timeout, image       string
	array, arrayValues              string
	priority, retries               int
	cpuSet                          bool
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", stdout, stderr)
	api := apiFlag(fs)
	cred := credentialFlag(fs)
	var o runOpts
	fs.StringVar(&o.cpu, "cpu", "1", "CPU cores (2, 0.5) or millicores (500m); given, it is a quota the node must enforce")
	fs.StringVar(&o.mem, "mem", "", "memory, e.g. 512MiB or 4GiB")
	fs.StringVar(&o.gpu, "gpu", "", "whole GPUs (1, 2), or a fraction of one GPU (0.25)")
	fs.StringVar(&o.gpuMem, "gpu-mem", "", "GPU memory needed, e.g. 40GiB (with --gpu)")
	fs.StringVar(&o.gpuModel, "gpu-model", "", "GPU model wanted (with --gpu)")
	fs.IntVar(&o.priority, "priority", spec.DefaultPriority, fmt.Sprintf("job priority, %d to %d; higher runs sooner", spec.MinPriority, spec.MaxPriority))
	fs.StringVar(&o.name, "name", "", `job name (default "run-" + the command's base name)`)
	fs.StringVar(&o.typ, "type", "", "job type for runtime prediction (default the name)")
	fs.IntVar(&o.retries, "retries", 0, "retries of a failed run (default none: a failing command fails at once, as srun's does; a spec's tasks default to 3)")
	fs.StringVar(&o.timeout, "timeout", "", "limit on one run, e.g. 30m")
	fs.StringVar(&o.image, "image", "", "run the command inside this OCI image (name:tag), through podman or docker on a node that has one; pinned to the image's ID on the node asked (docs/containers.md)")
	fs.StringVar(&o.array, "array", "", `run the command once per index, as Slurm's --array: "0-99", "1,3,10-20:5", with "%K" at most K at once ("0-999%50"); each run is told its index in AGORA_ARRAY_INDEX`)
	fs.StringVar(&o.arrayValues, "array-values", "", "a file of the elements' parameters, one per line, told to each run in AGORA_ARRAY_VALUE (without --array: one run per line, indices 0 up)")
	wait := fs.Bool("wait", false, "wait for the job to finish, printing its output (stdout to stdout, stderr to stderr); exit with its exit code")
	asJSON := fs.Bool("json", false, `print {"id": ...} instead of the bare job ID (with --wait: as the first line of stdout)`)
	argv, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if code := loadCredential(*cred, "run", stderr); code != exitOK {
		return code
	}
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "agora run: missing command (usage: agora run [flags] -- CMD ARGS...)")
		return exitBadUsage
	}
	o.cpuSet = flagWasSet(fs, "cpu")
	s, err := buildRunSpec(o, argv)
	if err != nil {
		fmt.Fprintf(stderr, "agora run: %v\n", err)
		return exitBadUsage
	}
	body, err := json.Marshal(s)
	if err != nil {
		fmt.Fprintf(stderr, "agora run: %v\n", err)
		return exitFailed
	}
	if _, err := spec.Parse(body, time.Now()); err != nil {
		var ve *spec.ValidationError
		if !errors.As(err, &ve) {
			fmt.Fprintf(stderr, "agora run: %v\n", err)
			return exitBadUsage
		}
		for _, fe := range ve.Errors {
			fmt.Fprintf(stderr, "agora run: %s: %s\n", runFlagFor(fe.Path), fe.Msg)
		}
		return exitBadUsage
	}
	if !*wait {
		return submitJob("run", *api, body, "application/json", false, *asJSON, stdout, stderr)
	}
	id, code := postJob("run", *api, body, "application/json", stderr)
	if code != exitOK {
		return code
	}
	if *asJSON {
		b, _ := json.Marshal(submitted{ID: id}) // one line: the task's output follows
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintf(stderr, "job %s\n", id) // stdout is the task's
	}
	return runOutput(*api, id, len(s.Tasks[0].Array) == 0, stdout, stderr)
}

// runOutput follows a job's output to its end — the task's standard
// output to stdout, its standard error (and a header for each new
// attempt) to stderr — and returns the exit code of `agora run --wait`:
// 0 if the job succeeded, the task's own exit code if it exited with one,
// else 1. An array's runs are all followed, each under a header.
func runOutput(api, id string, one bool, stdout, stderr io.Writer) int {
	f := &logFollower{id: id, c: newPollClient(api), out: &logPrinter{w: stdout, errW: stderr}, withReplica: one}
	if err := f.follow(); err != nil {
		fmt.Fprintf(stderr, "agora run: stopped following job %s: %s\n", id, flatten(err.Error()))
		return exitFailed
	}
	var st jobStatus
	var r retrier
	for {
		err := f.c.do("GET", jobPath(id, ""), nil, &st)
		if err == nil {
			break
		}
		if r.giveUp(err) {
			fmt.Fprintf(stderr, "agora run: job %s: %s\n", id, flatten(err.Error()))
			return exitFailed
		}
		time.Sleep(waitInterval)
	}
	if st.State == "succeeded" {
		return exitOK
	}
	msg := fmt.Sprintf("agora run: job %s %s", id, st.State)
	if st.Reason != "" {
		msg += ": " + flatten(st.Reason)
	}
	fmt.Fprintln(stderr, msg)
	for _, t := range st.Tasks {
		if t.State == "failed" && t.ExitCode > 0 && t.ExitCode < 256 {
			return t.ExitCode
		}
	}
	return exitFailed
}

// buildRunSpec turns agora run's flags and command into a job spec,
// checking the flag values that spec.Parse would otherwise report with
// less context.
func buildRunSpec(o runOpts, argv []string) (*runSpec, error) {
	task := runTask{Name: "main", Command: argv, Timeout: o.timeout, Image: o.image, Array: o.array}
	if o.arrayValues != "" {
		values, err := readArrayValues(o.arrayValues)
		if err != nil {
			return nil, fmt.Errorf("--array-values: %v", err)
		}
		task.Values = values
		if task.Array == "" {
			task.Array = fmt.Sprintf("0-%d", len(values)-1)
		}
	}
	task.Retries = &o.retries // the spec's default (3) is for pipelines, not a command typed once
	if _, err := resource.ParseCPU(o.cpu); err != nil {
		return nil, fmt.Errorf("--cpu: %v", err)
	}
	// Only a given --cpu asks the node to enforce it (resource.LimitCPU).
	if f, err := strconv.ParseFloat(strings.TrimSpace(o.cpu), 64); err == nil && o.cpuSet {
		task.Resources.CPU = f
	} else if o.cpuSet {
		task.Resources.CPU = strings.TrimSpace(o.cpu)
	}
	if o.mem != "" {
		if _, err := resource.ParseSize(o.mem); err != nil {
			return nil, fmt.Errorf("--mem: %v", err)
		}
		task.Resources.Memory = o.mem
	}
	gpu, err := runGPURequest(o)
	if err != nil {
		return nil, err
	}
	task.Resources.GPU = gpu
	name := o.name
	if name == "" {
		name = truncateUTF8("run-"+filepath.Base(argv[0]), spec.MaxJobNameLen)
	}
	typ := o.typ
	if typ == "" {
		typ = name
	}
	return &runSpec{Name: name, Type: typ, Priority: o.priority, Tasks: []runTask{task}}, nil
}

// readArrayValues reads an array's element parameters from a file, one
// per line (a last line without a newline counts; no line, no values).
func readArrayValues(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	text := strings.TrimSuffix(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
	if text == "" {
		return nil, fmt.Errorf("%s holds no values (want one per line)", path)
	}
	values := strings.Split(text, "\n")
	if len(values) > spec.MaxReplicas {
		return nil, fmt.Errorf("%s holds %d values, over the limit of %d elements", path, len(values), spec.MaxReplicas)
	}
	return values, nil
}

// runGPURequest builds the GPU part of agora run's request, or nil when
// --gpu is not given.
func runGPURequest(o runOpts) (*runGPU, error) {
	if o.gpu == "" {
		switch {
		case o.gpuMem != "":
			return nil, errors.New("--gpu-mem needs --gpu")
		case o.gpuModel != "":
			return nil, errors.New("--gpu-model needs --gpu")
		}
		return nil, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(o.gpu), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 || (f > 1 && f != math.Trunc(f)) {
		return nil, fmt.Errorf("--gpu: invalid value %q: want a whole number of GPUs, or a fraction between 0 and 1 for a share of one GPU", o.gpu)
	}
	g := &runGPU{Model: o.gpuModel}
	if f == math.Trunc(f) {
		if f > spec.MaxGPUCount {
			return nil, fmt.Errorf("--gpu: %s GPUs is over the limit of %d", o.gpu, spec.MaxGPUCount)
		}
		g.Count = int(f)
	} else {
		g.Share = f
	}
	if o.gpuMem != "" {
		if _, err := resource.ParseSize(o.gpuMem); err != nil {
			return nil, fmt.Errorf("--gpu-mem: %v", err)
		}
		g.Memory = o.gpuMem
	}
	return g, nil
}

// runFlagFor maps a spec field path to the agora run flag that set it,
// falling back to the path of the nearest field containing it.
func runFlagFor(path string) string {
	for p := path; p != ""; {
		if f, ok := runFlagOf[p]; ok {
			return f
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	if path == "" {
		return "job"
	}
	return path
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
