package executor

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/runtime"
)

// Sandbox settings of a node (agora node --task-user, --task-env).
type Sandbox struct {
	// TaskUser is who tasks run as: "" or "auto" (a root node: an ID of
	// its own per task, from the block of runtime.HostTaskIDs it claims
	// in IDClaimDir; another node: its own user), a user name or numeric
	// ID (every task as that user), or "node" (the node's own user, root
	// included), or "map" (each task as its owner's local account:
	// UserMap, with the mapping file UserMapFile when set).
	TaskUser    string
	UserMapFile string
	// IDClaimDir is the host-wide directory where the root nodes of a
	// host claim their blocks of task IDs; "": runtime.DefaultIDClaimDir.
	IDClaimDir string
	// PassEnv names the node's environment variables tasks also get;
	// otherwise a task sees its spec's variables, Agora's, and PATH.
	PassEnv []string
	// PidsMax bounds each task's processes where the pids controller is
	// available; 0: no bound.
	PidsMax int
	// CgroupParent is the cgroup v2 directory task cgroups are made in;
	// "": the node's own.
	CgroupParent string
	// AllowUnenforcedLimits runs tasks that ask for limits the node
	// cannot enforce, instead of refusing them.
	AllowUnenforcedLimits bool
	// Namespaces starts tasks in mount, PID and IPC namespaces of their
	// own with a private /tmp (runtime.Options.Namespaces); the program
	// must call runtime.TaskInit first in main.
	Namespaces bool
	// ContainerRuntime is the engine image tasks run through: "auto"
	// (or ""): podman, else docker, if one works here; "podman" or
	// "docker": that one, or the node does not start; "none": no image
	// tasks (--container-runtime).
	ContainerRuntime string
}

// ContainerEngine is a TaskRunner that runs images (runtime.Runner
// does, when it found an engine).
type ContainerEngine interface {
	ContainerRuntime() *runtime.ContainerRuntime
}

// EngineOf is the engine r runs images through, nil when none.
func EngineOf(r TaskRunner) *runtime.ContainerRuntime {
	if ce, ok := r.(ContainerEngine); ok {
		return ce.ContainerRuntime()
	}
	return nil
}

// LimitEnforcer is a TaskRunner that says which task limits it
// enforces (runtime.Runner does).
type LimitEnforcer interface {
	Enforces() resource.Limits
}

// Enforcement is what a node running its tasks with r does with the
// limits tasks ask for. A runner that does not say (a test's, a
// benchmark's) is taken to enforce every limit: it runs no real process.
func (s Sandbox) Enforcement(r TaskRunner) resource.Enforcement {
	e := resource.Enforcement{Unenforced: s.AllowUnenforcedLimits}
	if le, ok := r.(LimitEnforcer); ok {
		e.Missing = resource.AllLimits &^ le.Enforces()
	}
	return e
}

// DefaultTaskPath is the PATH a task gets unless the node passes its own
// through (PassEnv).
const DefaultTaskPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// RunnerFor is r when set, else the process runtime sandboxed by s
// (RunnerOptions).
func RunnerFor(r TaskRunner, s Sandbox, dataDir string) (TaskRunner, error) {
	if r != nil {
		return r, nil
	}
	opts, how, err := s.RunnerOptions(dataDir)
	if err != nil {
		return nil, err
	}
	if s.Namespaces {
		opts.Namespaces = true
		exe, err := os.Executable()
		if err == nil {
			err = runtime.CheckNamespaces(exe)
		}
		if err != nil {
			return nil, fmt.Errorf("--task-namespaces: %v", err)
		}
		how += "; in namespaces of their own, with a private /tmp"
	}
	want := s.ContainerRuntime
	if want == "" {
		want = runtime.ContainerAuto
	}
	cache := ""
	if os.Geteuid() == 0 {
		cache = filepath.Dir(runtime.DefaultIDClaimDir) // /run/agora: per boot, the host's root nodes'
	}
	engine, err := runtime.DetectContainerRuntimeCached(context.Background(), want, cache)
	switch {
	case engine != nil:
		log.Infow("container runtime", "engine", engine.String(), "run args", strings.Join(append(append([]string{}, engine.Global...), engine.RunArgs...), " "))
	case err != nil && want != runtime.ContainerAuto:
		return nil, fmt.Errorf("--container-runtime %s: %v (give --container-runtime none to run no images)", want, err)
	case err != nil:
		log.Infow("container runtime: none, image tasks go to other nodes", "why", err)
	}
	opts.Container = engine
	rr := runtime.NewRunner(opts)
	if err := rr.CgroupProblem(); err != nil && s.CgroupParent != "" {
		return nil, fmt.Errorf("--cgroup-parent %s: %v", s.CgroupParent, err)
	}
	unenforced := "refused"
	if s.AllowUnenforcedLimits {
		unenforced = "run unenforced (--allow-unenforced-limits)"
	}
	if opts.Isolation.IDs.Count == 0 && opts.Isolation.User == nil && os.Geteuid() == 0 {
		log.Warnw("task sandbox", "user", how, "limits enforced", rr.Limits(), "tasks asking for other limits", unenforced)
	} else {
		log.Infow("task sandbox", "user", how, "limits enforced", rr.Limits(), "tasks asking for other limits", unenforced)
	}
	return rr, nil
}

// RunnerOptions turns a node's sandbox settings into the runtime's
// options, checking that the machine can give them and that dataDir
// lets tasks with other IDs reach their directories; it makes dataDir
// traversable (0711) but not listable by them. What it says names the
// flag to change.
func (s Sandbox) RunnerOptions(dataDir string) (runtime.Options, string, error) {
	if s.PidsMax < 0 {
		return runtime.Options{}, "", fmt.Errorf("--task-pids %d: negative (0: no bound)", s.PidsMax)
	}
	opts := runtime.Options{BaseEnv: []string{"PATH=" + DefaultTaskPath}, PidsMax: s.PidsMax, CgroupParent: s.CgroupParent}
	for _, name := range s.PassEnv {
		if v, ok := os.LookupEnv(name); ok {
			if name == "PATH" {
				opts.BaseEnv = opts.BaseEnv[1:]
			}
			opts.BaseEnv = append(opts.BaseEnv, name+"="+v)
		}
	}
	opts.Isolation.NoNewPrivs = true
	root := os.Geteuid() == 0
	switch u := s.TaskUser; {
	case u == "node":
		return opts, "tasks run as the node's user", nil
	case u == "map":
		if !root {
			return opts, "", fmt.Errorf("--task-user map: the node must run as root to run tasks as their owners")
		}
		if err := reachable(dataDir); err != nil {
			return opts, "", fmt.Errorf("--task-user map: %v", err)
		}
		how := "by name"
		if s.UserMapFile != "" {
			how = "through " + s.UserMapFile
		}
		return opts, "each task runs as its owner's local account, mapped " + how + " (--task-user map)", nil
	case u == "" || u == "auto":
		if !root {
			return opts, "tasks run as the node's user (not root: it cannot switch users)", nil
		}
		opts.Isolation.IDs = runtime.IDRange{First: runtime.HostTaskIDs.First, Count: runtime.TaskIDBlock} // probed below, then claimed
	default:
		id, err := lookupUser(u)
		if err != nil {
			return opts, "", fmt.Errorf("--task-user %s: %v", u, err)
		}
		if id.UID == 0 {
			return opts, "tasks run as root (--task-user " + u + ")", nil
		}
		opts.Isolation.User = &id
	}
	err := runtime.CheckIsolation(opts.Isolation, dataDir)
	if err == nil {
		err = reachable(dataDir)
	}
	if err != nil && (s.TaskUser == "" || s.TaskUser == "auto") {
		// The default degrades, saying so; an asked-for user does not.
		opts.Isolation.IDs = runtime.IDRange{}
		return opts, fmt.Sprintf("tasks run as the node's user, NOT isolated from it or each other: %v", err), nil
	}
	if err != nil {
		return opts, "", fmt.Errorf("--task-user %s: %v (give --task-user node to run tasks as the node's user)", s.TaskUser, err)
	}
	if opts.Isolation.IDs.Count > 0 {
		dir := s.IDClaimDir
		if dir == "" {
			dir = runtime.DefaultIDClaimDir
		}
		claim, err := runtime.ClaimTaskIDs(dir, dataDir)
		if err != nil {
			return opts, "", fmt.Errorf("--task-user auto: %v (set --task-ids-dir, or give --task-user node to run tasks as the node's user)", err)
		}
		opts.Isolation.IDs, opts.IDClaim = claim.Range, claim
		return opts, fmt.Sprintf("each task runs as a user of its own (IDs %d-%d, block %d claimed in %s)",
			claim.Range.First, claim.Range.First+claim.Range.Count-1, claim.Block, dir), nil
	}
	return opts, fmt.Sprintf("tasks run as user %d, group %d, all as the same user", opts.Isolation.User.UID, opts.Isolation.User.GID), nil
}

// lookupUser reads a user name or numeric ID.
func lookupUser(s string) (runtime.Identity, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return runtime.Identity{UID: uint32(n), GID: uint32(n)}, nil
	}
	u, err := user.Lookup(s)
	if err != nil {
		return runtime.Identity{}, err
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return runtime.Identity{}, fmt.Errorf("user %s has IDs %s:%s", s, u.Uid, u.Gid)
	}
	return runtime.Identity{UID: uint32(uid), GID: uint32(gid)}, nil
}

// reachable makes dataDir traversable by other users and checks that its
// parents are: a task under another ID must reach its directory beneath.
func reachable(dataDir string) error {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return err
	}
	if err := os.Chmod(abs, 0o711); err != nil {
		return err
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("tasks under other users cannot reach the data directory: %s is mode %#o; make it traversable (chmod o+x %s) or put --data elsewhere",
				d, st.Mode().Perm(), strings.ReplaceAll(d, " ", `\ `))
		}
		if d == "/" || d == filepath.Dir(d) {
			return nil
		}
	}
}
