package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Namespaces (Options.Namespaces) start each task in mount, PID and IPC
// namespaces of its own, with a private /tmp and /dev/shm and a /proc
// that shows only its processes. The namespaces are made by the kernel
// at fork; the mounts by a small init process — this program run again
// under the name TaskInitName, which must call TaskInit first thing in
// main — that then starts the command as the task's user, reaps what
// its processes leave, and exits as the command did. When it exits, the
// kernel kills every process left in the task's PID namespace.

// TaskInitName is argv[0] of the init process of a task in namespaces.
const TaskInitName = "agora-task-init"

// nsCloneFlags are the namespaces a task gets.
const nsCloneFlags = syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC

// privateMounts are the directories the init process covers with a
// fresh tmpfs.
var privateMounts = []string{"/tmp", "/dev/shm"}

// TaskInit runs the init process of a task in namespaces, and exits,
// when this process was started as one (argv[0] is TaskInitName);
// otherwise it returns at once. A program whose Runner has
// Options.Namespaces calls it first in main, before anything else runs.
func TaskInit() {
	if len(os.Args) == 0 || os.Args[0] != TaskInitName {
		return
	}
	code, err := taskInit(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", TaskInitName, err)
	}
	os.Exit(code)
}

// initArgs is what the runtime tells a task's init process: who to run
// the command as, which directories under a private mount to keep
// reachable at their paths, and the command.
type initArgs struct {
	cred *syscall.Credential // nil: stay as is
	keep []string
	path string
	argv []string
}

func (a initArgs) encode() []string {
	out := []string{TaskInitName, "-"}
	if a.cred != nil {
		out[1] = fmt.Sprintf("%d:%d", a.cred.Uid, a.cred.Gid)
		if len(a.cred.Groups) > 0 {
			gs := make([]string, len(a.cred.Groups))
			for i, g := range a.cred.Groups {
				gs[i] = strconv.FormatUint(uint64(g), 10)
			}
			out[1] += ":" + strings.Join(gs, ",")
		}
	}
	for _, k := range a.keep {
		out = append(out, "-k", k)
	}
	out = append(out, "--", a.path)
	return append(out, a.argv...)
}

func decodeInitArgs(args []string) (initArgs, error) {
	var a initArgs
	if len(args) == 0 {
		return a, errors.New("no arguments")
	}
	if args[0] != "-" {
		u, g, ok := strings.Cut(args[0], ":")
		g, groups, _ := strings.Cut(g, ":")
		uid, err1 := strconv.ParseUint(u, 10, 32)
		gid, err2 := strconv.ParseUint(g, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return a, fmt.Errorf("bad identity %q", args[0])
		}
		a.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		for _, s := range strings.Split(groups, ",") {
			if s == "" {
				continue
			}
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return a, fmt.Errorf("bad identity %q", args[0])
			}
			a.cred.Groups = append(a.cred.Groups, uint32(n))
		}
	}
	args = args[1:]
	for len(args) >= 2 && args[0] == "-k" {
		a.keep = append(a.keep, args[1])
		args = args[2:]
	}
	if len(args) < 2 || args[0] != "--" {
		return a, errors.New("no command")
	}
	a.path, a.argv = args[1], args[2:]
	return a, nil
}

// taskInit is the init process: mounts, then the command.
func taskInit(args []string) (int, error) {
	a, err := decodeInitArgs(args)
	if err != nil {
		return 127, err
	}
	if err := privatise(a.keep); err != nil {
		return 127, err
	}
	if a.path == "" { // the probe (CheckNamespaces)
		return 0, nil
	}
	// Signals from outside reach an init process only where it handles
	// them; the runtime signals the whole group, the command included,
	// so the init process only outlives them. Handled, not ignored: an
	// ignored signal would stay ignored in the command.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	cmd := &exec.Cmd{Path: a.path, Args: a.argv, Env: os.Environ(), Stdin: nil, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Credential: a.cred}}
	if err := cmd.Start(); err != nil {
		return 127, err
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 127, fmt.Errorf("wait: %w", err)
		}
		if pid != cmd.Process.Pid {
			continue // an orphan of the task, reaped
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus(), nil
		case ws.Signaled():
			return 128 + int(ws.Signal()), nil
		}
	}
}

// privatise makes this mount namespace's mounts private, covers
// privateMounts with fresh tmpfs (binding the directories of keep that
// lay under one back at their paths), and mounts a /proc of this PID
// namespace.
func privatise(keep []string) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	type held struct {
		path string
		fd   int
	}
	var keepFDs []held
	for _, k := range keep {
		for _, m := range privateMounts {
			if k == m || strings.HasPrefix(k, m+"/") {
				fd, err := syscall.Open(k, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
				if err != nil {
					return fmt.Errorf("keep %s: %w", k, err)
				}
				keepFDs = append(keepFDs, held{k, fd})
			}
		}
	}
	for _, m := range privateMounts {
		if st, err := os.Stat(m); err != nil || !st.IsDir() {
			continue
		}
		if err := syscall.Mount("tmpfs", m, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("private %s: %w", m, err)
		}
	}
	for _, h := range keepFDs {
		if err := os.MkdirAll(h.path, 0o711); err != nil {
			return fmt.Errorf("keep %s: %w", h.path, err)
		}
		for d := filepath.Dir(h.path); d != "/" && d != "."; d = filepath.Dir(d) {
			_ = os.Chmod(d, 0o711) // traversable, as on the host, not listable
			if d == "/tmp" || d == "/dev/shm" {
				_ = os.Chmod(d, 0o1777)
				break
			}
		}
		if err := syscall.Mount("/proc/self/fd/"+strconv.Itoa(h.fd), h.path, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("keep %s: %w", h.path, err)
		}
		syscall.Close(h.fd)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return nil
}

// CheckNamespaces says why tasks cannot be started in namespaces here,
// or returns nil: it starts the init process (exe, which calls
// TaskInit) in them and has it make its mounts.
func CheckNamespaces(exe string) error {
	if os.Geteuid() != 0 {
		return errors.New("task namespaces need the node to run as root")
	}
	cmd := &exec.Cmd{Path: exe, Args: []string{TaskInitName, "-", "--", ""},
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: nsCloneFlags}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("starting a task in namespaces failed: %v %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
