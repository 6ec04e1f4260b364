package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Container asks for a task's command to run inside an OCI image, through
// the node's ContainerRuntime, instead of as a process of the host.
type Container struct {
	// Image is the reference the user gave (name:tag, name@sha256:…).
	Image string
	// ID is the image ID the job was pinned to at submission ("sha256:"
	// and 64 hex digits: the digest of the image's config, the same on
	// every node that holds the image). The task runs this ID; a local
	// Image that names another ID is refused (ErrImageMismatch).
	ID string
	// Devices are host device paths passed into the container (declared
	// devices and the assigned GPUs' nodes).
	Devices []string
}

// ErrImageMismatch marks a start refused because the node's copy of the
// image reference names another image than the one the job was pinned to.
var ErrImageMismatch = errors.New("image does not match its pinned ID")

var imageIDPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ValidImageID reports whether id has the form of a pinned image ID.
func ValidImageID(id string) bool { return imageIDPattern.MatchString(id) }

// ContainerRuntime is the container engine's command line a node runs
// images through: podman, or docker with a reachable daemon.
type ContainerRuntime struct {
	// Name is "podman" or "docker".
	Name string
	// Path is the engine's executable.
	Path string
	// Global are arguments before every subcommand (podman's --runtime
	// when its default OCI runtime cannot work on this host).
	Global []string
	// RunArgs are added to every run: explicit ulimits no higher than
	// the node's own hard limits, which an engine's defaults may exceed
	// (then every start fails with "setrlimit: operation not permitted").
	RunArgs []string
	// OCI names the OCI runtime in use and Version the engine's, for the
	// node's start line and adverts.
	OCI, Version string
	// Init: the engine has a small init to run as the container's PID 1,
	// which passes SIGTERM on (a shell as PID 1 ignores it).
	Init bool
	// CDIGPUs names each GPU (by NVML index) as a CDI device of kind
	// CDIKind (NvidiaCDIKind when empty), when the host's CDI specs list
	// them all (cdi.go); set by the node at start, after discovery.
	CDIGPUs map[int]string `json:"-"`
	CDIKind string         `json:"-"`
}

// String describes the runtime for logs and adverts.
func (c *ContainerRuntime) String() string {
	if c == nil {
		return "none"
	}
	s := c.Name + " " + c.Version
	if c.OCI != "" {
		s += " (" + c.OCI + ")"
	}
	return s
}

// command builds an engine command line.
func (c *ContainerRuntime) command(ctx context.Context, args ...string) *exec.Cmd {
	all := append(append([]string{}, c.Global...), args...)
	return exec.CommandContext(ctx, c.Path, all...)
}

// output runs an engine command and returns its stdout, or an error with
// its stderr.
func (c *ContainerRuntime) output(ctx context.Context, args ...string) ([]byte, error) {
	cmd := c.command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%s %s: %s", c.Name, args[0], msg)
	}
	return out, nil
}

// ImageID returns the ID of the local image ref names, or an error when
// the node does not hold it.
func (c *ContainerRuntime) ImageID(ctx context.Context, ref string) (string, error) {
	out, err := c.output(ctx, "image", "inspect", "--format", "{{.Id}}", ref)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(out))
	if !strings.HasPrefix(id, "sha256:") {
		id = "sha256:" + id
	}
	if !ValidImageID(id) {
		return "", fmt.Errorf("%s: image %s has an ID of unexpected form %q", c.Name, ref, id)
	}
	return id, nil
}

// ImageSize returns the size in bytes of the local image with ID id, as
// the engine counts it (its layers unpacked).
func (c *ContainerRuntime) ImageSize(ctx context.Context, id string) (int64, error) {
	out, err := c.output(ctx, "image", "inspect", "--format", "{{.Size}}", id)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: image %s has a size of unexpected form %q", c.Name, id, strings.TrimSpace(string(out)))
	}
	return n, nil
}

// ImageIDs lists the IDs of the images the engine holds.
func (c *ContainerRuntime) ImageIDs(ctx context.Context) ([]string, error) {
	out, err := c.output(ctx, "images", "--quiet", "--no-trunc")
	if err != nil {
		return nil, err
	}
	var ids []string
	seen := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		if !strings.HasPrefix(l, "sha256:") {
			l = "sha256:" + l
		}
		if ValidImageID(l) && !seen[l] {
			seen[l] = true
			ids = append(ids, l)
		}
	}
	return ids, nil
}

// HasImage reports whether the node holds the image with ID id.
func (c *ContainerRuntime) HasImage(ctx context.Context, id string) bool {
	got, err := c.ImageID(ctx, id)
	return err == nil && got == id
}

// SaveImage writes the image with ID id to w as a docker-archive.
func (c *ContainerRuntime) SaveImage(ctx context.Context, id string, w io.Writer) error {
	if !ValidImageID(id) {
		return fmt.Errorf("image ID %q is not sha256:<64 hex digits>", id)
	}
	args := []string{"save", id}
	if c.Name == ContainerPodman {
		args = []string{"save", "--format", "docker-archive", id}
	}
	cmd := c.command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%s save: %s", c.Name, msg)
	}
	return nil
}

// LoadImage loads the docker-archive at path into the engine.
func (c *ContainerRuntime) LoadImage(ctx context.Context, path string) error {
	_, err := c.output(ctx, "load", "--input", path)
	return err
}

// RemoveImage removes the image with ID id from the engine. The engine
// refuses while a container uses it, or when it has names besides
// (an operator's tag): either way it stays.
func (c *ContainerRuntime) RemoveImage(ctx context.Context, id string) error {
	if !ValidImageID(id) {
		return fmt.Errorf("image ID %q is not sha256:<64 hex digits>", id)
	}
	_, err := c.output(ctx, "rmi", id)
	return err
}

// Runtime names accepted by DetectContainerRuntime.
const (
	ContainerAuto   = "auto"
	ContainerPodman = "podman"
	ContainerDocker = "docker"
	ContainerNone   = "none"
)

// DetectContainerRuntime finds the engine want names ("auto": podman,
// else docker with a running daemon; "none": no engine, nil and no
// error) and checks that it can run containers on this host. It returns
// nil and an error saying why when the engine was asked for by name and
// cannot work, and nil with the reason for "auto" when none can.
func DetectContainerRuntime(ctx context.Context, want string) (*ContainerRuntime, error) {
	switch want {
	case ContainerNone:
		return nil, nil
	case ContainerPodman, ContainerDocker:
		return probeEngine(ctx, want)
	case ContainerAuto, "":
		var why []string
		for _, name := range []string{ContainerPodman, ContainerDocker} {
			c, err := probeEngine(ctx, name)
			if err == nil {
				return c, nil
			}
			why = append(why, err.Error())
		}
		return nil, errors.New(strings.Join(why, "; "))
	default:
		return nil, fmt.Errorf("container runtime %q: want auto, podman, docker or none", want)
	}
}

// engineInfo is the part of "podman info" / "docker info" the probe reads.
type engineInfo struct {
	Host struct { // podman
		OCIRuntime struct {
			Name string `json:"name"`
		} `json:"ociRuntime"`
		CgroupVersion string `json:"cgroupVersion"`
	} `json:"host"`
	Version struct { // podman
		Version string `json:"Version"`
	} `json:"version"`
	DefaultRuntime string `json:"DefaultRuntime"` // docker
	ServerVersion  string `json:"ServerVersion"`  // docker
	CgroupVersion  string `json:"CgroupVersion"`  // docker
}

// probeEngine checks one engine.
func probeEngine(ctx context.Context, name string) (*ContainerRuntime, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("%s: not installed", name)
	}
	c := &ContainerRuntime{Name: name, Path: path}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := c.output(ctx, "info", "--format", "{{json .}}")
	if err != nil {
		return nil, fmt.Errorf("%s does not work here: %w", name, err)
	}
	var info engineInfo
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("%s info: %w", name, err)
	}
	if name == ContainerDocker {
		c.OCI, c.Version, c.Init = info.DefaultRuntime, info.ServerVersion, true
	} else {
		c.Init = podmanInit()
		c.OCI, c.Version = info.Host.OCIRuntime.Name, info.Version.Version
		if c.OCI == "crun" && hybridCgroups() {
			// crun refuses a host whose cgroup v2 is mounted beside v1
			// ("cgroups in hybrid mode not supported"); runc copes.
			runc, err := exec.LookPath("runc")
			if err != nil {
				return nil, errors.New("podman: its OCI runtime crun does not support this host's hybrid cgroups, and runc is not installed")
			}
			c.Global, c.OCI = []string{"--runtime", runc}, "runc"
		}
	}
	if name == ContainerPodman {
		args, err := c.probeUlimits(ctx)
		if err != nil {
			return nil, err
		}
		c.RunArgs = args
	}
	return c, nil
}

// probeImage is the empty image the engine's start-up check runs: it has
// no files, so a start that gets as far as running a program fails with
// 127, and one the engine cannot set up fails otherwise.
const probeImage = "localhost/agora/probe:empty"

// probeUlimits finds open-file and process limits the engine can give a
// container: the node's own hard limits where it may raise them, else
// the first of a few lower ones that starts. A host that denies the
// engine CAP_SYS_RESOURCE (so it cannot raise a limit past its own
// processes') fails every start with "setrlimit: operation not
// permitted" under podman's defaults. Each try starts probeImage's
// missing program: exit 127 means the container was set up.
func (c *ContainerRuntime) probeUlimits(ctx context.Context) ([]string, error) {
	if err := c.command(ctx, "image", "exists", probeImage).Run(); err != nil {
		imp := c.command(ctx, "import", "-", probeImage)
		imp.Stdin = bytes.NewReader(make([]byte, 1024)) // an empty tar archive
		if out, err := imp.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("podman: cannot make its probe image: %v: %s", err, strings.TrimSpace(string(out)))
		}
	}
	var nofile, nproc syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile) != nil || syscall.Getrlimit(6 /* RLIMIT_NPROC */, &nproc) != nil {
		return nil, errors.New("podman: cannot read this node's limits")
	}
	var last string
	for _, try := range [][2]uint64{{nofile.Max, nproc.Max}, {16384, 16384}, {4096, 4096}, {1024, 1024}} {
		f, p := min(try[0], nofile.Max), min(try[1], nproc.Max)
		args := []string{"--ulimit", fmt.Sprintf("nofile=%d:%d", f, f), "--ulimit", fmt.Sprintf("nproc=%d:%d", p, p)}
		run := append([]string{"run", "--rm", "--network", "host"}, args...)
		out, err := c.command(ctx, append(run, probeImage, "/agora-probe-absent")...).CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 127 {
			return args, nil
		}
		last = strings.TrimSpace(string(out))
		if err == nil {
			last = "a program that does not exist ran"
		}
		if !strings.Contains(last, "rlimit") {
			break // not a limits problem: more tries will not help
		}
	}
	return nil, fmt.Errorf("podman cannot start a container here: %s", last)
}

// podmanInit reports whether podman's --init program (catatonit) is
// installed where podman looks for it.
func podmanInit() bool {
	for _, p := range []string{"/usr/libexec/podman/catatonit"} { // its compiled-in init_path
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// hybridCgroups reports a host with cgroup v1 controllers and a v2 mount
// beside them.
func hybridCgroups() bool {
	var st syscall.Statfs_t
	if syscall.Statfs("/sys/fs/cgroup", &st) != nil || st.Type == 0x63677270 { // CGROUP2_SUPER_MAGIC: pure v2
		return false
	}
	_, err := os.Stat("/sys/fs/cgroup/unified")
	return err == nil
}

// writeEnvFile writes a task's environment (less PATH and HOSTNAME: the
// image's own PATH finds its programs) to a file only the node can read,
// for the engine's --env-file. The values reach the container and never
// the engine's own environment, which is the node's (engineEnv): a task's
// LD_PRELOAD, HOME, CONTAINERS_CONF or DOCKER_HOST must not steer an
// engine that runs as root. The caller removes the file when the task
// ends.
func writeEnvFile(env []string) (string, error) {
	var b strings.Builder
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "PATH" || k == "HOSTNAME" || k == "" {
			continue
		}
		if strings.ContainsAny(k, "=# \t\r\n") || strings.ContainsAny(v, "\r\n") {
			return "", fmt.Errorf("environment variable %q: a name with spaces or a value with a line break cannot be passed into a container", k)
		}
		b.WriteString(k + "=" + v + "\n")
	}
	f, err := os.CreateTemp("", "agora-env-")
	if err != nil {
		return "", fmt.Errorf("container environment: %w", err)
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("container environment: %w", err)
	}
	return f.Name(), nil
}

// engineEnv is the environment the engine runs in: the node's own, as for
// every other engine command the node runs (image checks, saves, loads).
func engineEnv() []string { return os.Environ() }

// containerName is the engine's name for task id's container.
func containerName(id string) string { return cgroupName(id) }

// containerArgs returns the argv that runs spec's command in its image:
// the work and checkpoint directories mounted at the paths a process task
// sees, the host's network (as for a process task), the task's user, its
// environment (from envFile, written by writeEnvFile: values stay out of
// the command line), its limits, devices and GPUs. user is "uid:gid", or
// "" for the image's own.
func (c *ContainerRuntime) containerArgs(id string, spec Spec, dir, envFile string, user string, pidsMax int) []string {
	args := append([]string{c.Path}, c.Global...)
	args = append(args, "run", "--name", containerName(id), "--pull", "never", "--network", "host",
		"--workdir", dir, "--volume", dir+":"+dir)
	if spec.CheckpointDir != "" {
		if ck, err := filepath.Abs(spec.CheckpointDir); err == nil {
			args = append(args, "--volume", ck+":"+ck)
		}
	}
	if c.Init {
		args = append(args, "--init")
	}
	if user != "" {
		args = append(args, "--user", user)
	}
	if envFile != "" {
		args = append(args, "--env-file", envFile)
	}
	if spec.Memory > 0 {
		m := strconv.FormatInt(spec.Memory, 10)
		args = append(args, "--memory", m, "--memory-swap", m)
	}
	if spec.CPUMilli > 0 {
		args = append(args, "--cpus", strconv.FormatFloat(float64(spec.CPUMilli)/1000, 'f', 3, 64))
	}
	if pidsMax > 0 {
		args = append(args, "--pids-limit", strconv.Itoa(pidsMax))
	}
	for _, d := range spec.Container.Devices {
		args = append(args, "--device", d)
	}
	gpuDevs, ok := c.cdiDevices(spec.GPUs)
	if !ok {
		gpuDevs = gpuDeviceNodes(spec.GPUs)
	}
	for _, d := range gpuDevs {
		args = append(args, "--device", d)
	}
	args = append(args, c.RunArgs...)
	args = append(args, spec.Container.ID)
	return append(args, spec.Command...)
}

// CheckGPUDevices is the node's start-up check that its GPUs (by NVML
// index) can be passed into a container: the driver's control device and
// each GPU's device file exist under dev ("/dev") as character devices.
// The error names the first that does not.
func CheckGPUDevices(dev string, gpus []int) error {
	names := []string{"nvidiactl"}
	for _, g := range gpus {
		names = append(names, fmt.Sprintf("nvidia%d", g))
	}
	for _, n := range names {
		p := filepath.Join(dev, n)
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("GPU device file %s: %w", p, err)
		}
		if fi.Mode()&os.ModeCharDevice == 0 {
			return fmt.Errorf("GPU device file %s is not a character device", p)
		}
	}
	return nil
}

// gpuDeviceNodes are the NVIDIA device nodes that give a container the
// GPUs with these indices (and the driver's shared nodes), where they
// exist on the host.
func gpuDeviceNodes(gpus []int) []string {
	if len(gpus) == 0 {
		return nil
	}
	var nodes []string
	for _, g := range gpus {
		nodes = append(nodes, fmt.Sprintf("/dev/nvidia%d", g))
	}
	nodes = append(nodes, "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
	var have []string
	for _, n := range nodes {
		if _, err := os.Stat(n); err == nil {
			have = append(have, n)
		}
	}
	return have
}

// checkPinned refuses to run an image whose local reference names
// another image than the pinned one, and one the node does not hold.
func (c *ContainerRuntime) checkPinned(ct *Container) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !ValidImageID(ct.ID) {
		return fmt.Errorf("image %s: pinned ID %q is not sha256:<64 hex digits>", ct.Image, ct.ID)
	}
	if ct.Image != "" {
		if got, err := c.ImageID(ctx, ct.Image); err == nil && got != ct.ID {
			return fmt.Errorf("%w: %s is %s here, the job was pinned to %s", ErrImageMismatch, ct.Image, got, ct.ID)
		}
	}
	if !c.HasImage(ctx, ct.ID) {
		return fmt.Errorf("image %s (%s) is not on this node", ct.Image, ct.ID)
	}
	return nil
}

// removeContainer deletes task id's container, stopping it at once if it
// still runs. Errors are only logged: a container that was never created
// is the usual case.
func (c *ContainerRuntime) removeContainer(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := c.command(ctx, "rm", "--force", "--time", "0", containerName(id)).CombinedOutput(); err != nil {
		log.Debugw("remove container", "id", id, "err", err, "out", strings.TrimSpace(string(out)))
	}
}

// oomKilled asks the engine whether the kernel killed task id's container
// for its memory limit.
func (c *ContainerRuntime) oomKilled(id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := c.output(ctx, "inspect", "--format", "{{.State.OOMKilled}}", containerName(id))
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

// DetectContainerRuntimeCached is DetectContainerRuntime with its answer
// kept in dir (host-wide, per boot: /run/agora on a root node) for the
// nodes of the host that start after: the check starts containers, a
// second or more, and several at once on one host (a test's cluster)
// take many seconds. The answer is reused only while the engine's and
// OCI runtimes' binaries, their configuration, the boot and the node's
// limits are what they were; a failed check is not kept. dir "" or not
// writable: no cache.
func DetectContainerRuntimeCached(ctx context.Context, want, dir string) (*ContainerRuntime, error) {
	if dir == "" || (want != ContainerAuto && want != "" && want != ContainerPodman) {
		return DetectContainerRuntime(ctx, want)
	}
	key := probeKey(want)
	file := filepath.Join(dir, "container-probe.json")
	var cached struct {
		Key     string
		Runtime ContainerRuntime
	}
	if b, err := os.ReadFile(file); err == nil && json.Unmarshal(b, &cached) == nil && cached.Key == key && cached.Runtime.Path != "" {
		rt := cached.Runtime
		return &rt, nil
	}
	rt, err := DetectContainerRuntime(ctx, want)
	if rt == nil {
		return rt, err
	}
	cached.Key, cached.Runtime = key, *rt
	if b, err := json.Marshal(cached); err == nil && os.MkdirAll(dir, 0o755) == nil {
		tmp := fmt.Sprintf("%s.%d.tmp", file, os.Getpid())
		if os.WriteFile(tmp, b, 0o644) == nil && os.Rename(tmp, file) != nil {
			os.Remove(tmp)
		}
	}
	return rt, nil
}

// probeKey names what a probe's answer depends on.
func probeKey(want string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d|", want, os.Geteuid())
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	b.Write(bytes.TrimSpace(boot))
	var lim syscall.Rlimit
	for _, r := range []int{syscall.RLIMIT_NOFILE, 6 /* RLIMIT_NPROC */} {
		if syscall.Getrlimit(r, &lim) == nil {
			fmt.Fprintf(&b, "|%d", lim.Max)
		}
	}
	files := []string{"/etc/containers/containers.conf", "/etc/containers/storage.conf", "/usr/share/containers/containers.conf", "/usr/libexec/podman/catatonit"}
	for _, name := range []string{"podman", "docker", "runc", "crun", "conmon"} {
		if p, err := exec.LookPath(name); err == nil {
			files = append(files, p)
		}
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "|%s:%d:%d", f, fi.Size(), fi.ModTime().UnixNano())
		} else {
			fmt.Fprintf(&b, "|%s:-", f)
		}
	}
	return b.String()
}
