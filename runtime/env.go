package runtime

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Names of the environment variables Agora sets for every task. They take
// precedence over the node's environment, Spec.Env and Spec.ExtraEnv.
const (
	// EnvJobID carries Spec.JobID.
	EnvJobID = "AGORA_JOB_ID"
	// EnvTask carries Spec.Task.
	EnvTask = "AGORA_TASK"
	// EnvReplica carries Spec.Replica.
	EnvReplica = "AGORA_REPLICA"
	// EnvAttempt carries Spec.Attempt.
	EnvAttempt = "AGORA_ATTEMPT"
	// EnvEpoch carries Spec.Epoch.
	EnvEpoch = "AGORA_EPOCH"
	// EnvCheckpointDir carries Spec.CheckpointDir; it is unset when that is
	// empty, even if the node's environment or Spec.Env has it.
	EnvCheckpointDir = "AGORA_CHECKPOINT_DIR"
	// EnvCUDAVisibleDevices lists Spec.GPUs comma-separated, and is set to
	// the empty string when no GPU is assigned.
	EnvCUDAVisibleDevices = "CUDA_VISIBLE_DEVICES"
)

// buildEnv returns the environment of a child running in dir: base, then
// spec.Env, then spec.ExtraEnv, then PWD and Agora's variables, later layers
// winning. Variables keep the position of their first appearance; new ones
// are appended.
func buildEnv(base []string, spec Spec, dir string) []string {
	values := make(map[string]string, len(base)+len(spec.Env)+8)
	var order []string
	set := func(k, v string) {
		if _, ok := values[k]; !ok {
			order = append(order, k)
		}
		values[k] = v
	}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		set(k, v)
	}
	for _, layer := range []map[string]string{spec.Env, spec.ExtraEnv} {
		for _, k := range slices.Sorted(maps.Keys(layer)) {
			set(k, layer[k])
		}
	}

	gpus := make([]string, len(spec.GPUs))
	for i, g := range spec.GPUs {
		gpus[i] = strconv.Itoa(g)
	}
	set("PWD", dir)
	if _, ok := values["HOME"]; !ok {
		set("HOME", dir) // a sandboxed task's base has none: its own directory
	}
	set(EnvJobID, spec.JobID)
	set(EnvTask, spec.Task)
	set(EnvReplica, strconv.Itoa(spec.Replica))
	set(EnvAttempt, strconv.Itoa(spec.Attempt))
	set(EnvEpoch, strconv.FormatUint(spec.Epoch, 10))
	set(EnvCUDAVisibleDevices, strings.Join(gpus, ","))
	if spec.CheckpointDir != "" {
		set(EnvCheckpointDir, spec.CheckpointDir)
	} else {
		// Agora owns the name: never let a stale value through.
		delete(values, EnvCheckpointDir)
	}

	env := make([]string, 0, len(values))
	for _, k := range order {
		if v, ok := values[k]; ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// lookupEnv returns the value of key in env, last occurrence winning.
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// lookPath resolves file like exec.LookPath, but against the PATH of the
// task's environment rather than the node's. Names containing a slash are
// returned unchanged (relative ones are resolved against the working
// directory when the process starts). Relative PATH entries are ignored.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	pathEnv, _ := lookupEnv(env, "PATH")
	for _, dir := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: file, Err: exec.ErrNotFound}
}
