package runtime

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultGrace is the time between SIGTERM and SIGKILL used when Spec.Grace
// is zero or negative.
const DefaultGrace = 10 * time.Second

// Spec describes one attempt of one task to be run as a local process.
type Spec struct {
	// JobID identifies the job the task belongs to. It is exported to the
	// process as AGORA_JOB_ID.
	JobID string
	// Task is the task's name within its job. It is exported as AGORA_TASK.
	Task string
	// Replica is the replica index of a gang-scheduled task, zero otherwise.
	// It is exported as AGORA_REPLICA.
	Replica int
	// Attempt counts the attempts to run this task. It is exported as
	// AGORA_ATTEMPT.
	Attempt int
	// Epoch is the scheduling epoch of the award. It is exported as
	// AGORA_EPOCH.
	Epoch uint64
	// Command is the argv of the process; no shell is involved. A first
	// element without a slash is looked up in the PATH of the task's own
	// environment; a relative one with a slash is relative to WorkDir.
	Command []string
	// Env holds the job's environment variables. They override the node's
	// environment and are overridden by ExtraEnv, by Agora's own variables
	// and by PWD, which is always the working directory.
	Env map[string]string
	// ExtraEnv holds variables the node adds for this attempt, such as
	// AGORA_RANK for gang replicas. They override Env.
	ExtraEnv map[string]string
	// User, when set, is the account the task runs as, whatever the
	// runner's Isolation says: its owner's local account on a node that
	// maps users (agora node --task-user map). The node must be root.
	User *Identity
	// WorkDir is the process's working directory, normally under the node's
	// data directory. It is created if missing and must not be empty.
	WorkDir string
	// GPUs lists the indices of the GPUs assigned to the task. They are
	// exported comma-separated as CUDA_VISIBLE_DEVICES, which is set to the
	// empty string when the list is empty.
	GPUs []int
	// Timeout bounds the task's run time; zero means no timeout.
	Timeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL when the task is stopped
	// or times out; DefaultGrace applies when it is zero or negative.
	Grace time.Duration
	// CheckpointDir, when not empty, is exported as AGORA_CHECKPOINT_DIR.
	CheckpointDir string
	// CPUMilli is the CPU limit in thousandths of a CPU (1000 is one CPU);
	// zero means no limit. It is applied only where cgroups allow it.
	CPUMilli int64
	// Memory is the memory limit in bytes; zero means no limit. It is
	// applied only where cgroups allow it.
	Memory int64
	// Disk is the most bytes the task may keep in its work directory;
	// zero means no limit. It is kept by measurement (disk.go): a task
	// past it is killed, and its result names the limit.
	Disk int64
	// ExitFile, when set, is where the task's exit status is written, by
	// a shell that runs the command and outlives the node: a node killed
	// while its task runs learns on restart that the task finished, and
	// how, instead of running it again.
	ExitFile string
	// Container, when set, runs Command inside an image through the
	// Runner's ContainerRuntime (Options.Container) rather than as a
	// process of the host.
	Container *Container
}

// grace returns the effective SIGTERM to SIGKILL delay.
func (s Spec) grace() time.Duration {
	if s.Grace <= 0 {
		return DefaultGrace
	}
	return s.Grace
}

// validate reports problems that make the spec impossible to run.
func (s Spec) validate() error {
	if len(s.Command) == 0 || s.Command[0] == "" {
		return errors.New("runtime: empty command")
	}
	if s.WorkDir == "" {
		return errors.New("runtime: empty work dir")
	}
	if s.Timeout < 0 {
		return fmt.Errorf("runtime: negative timeout %s", s.Timeout)
	}
	if s.CPUMilli < 0 || s.Memory < 0 || s.Disk < 0 {
		return errors.New("runtime: negative resource limit")
	}
	if c := s.Container; c != nil {
		if c.ID == "" {
			return errors.New("runtime: container without a pinned image ID")
		}
		for _, d := range c.Devices {
			if !strings.HasPrefix(d, "/dev/") {
				return fmt.Errorf("runtime: device %q is not under /dev", d)
			}
		}
	}
	for _, g := range s.GPUs {
		if g < 0 {
			return fmt.Errorf("runtime: invalid GPU index %d", g)
		}
	}
	for _, env := range []map[string]string{s.Env, s.ExtraEnv} {
		for k, v := range env {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
				return fmt.Errorf("runtime: invalid environment variable %q", k)
			}
		}
	}
	return nil
}
