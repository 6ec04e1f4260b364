package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora-sched/agora/devices/resource"
	taskrt "github.com/agora-sched/agora/runtime"
)

// The documentation runs as written (issue 41): README.md's and docs/'s
// fenced blocks are executed, in order, by bash, in a fresh copy of the
// checkout, the way a reader who just cloned it would type them.
//
// A block is taken by its info string and by an HTML comment (invisible
// when the page is rendered) on the line before it:
//
//	```sh, ```bash              run
//	```yaml, ```json            must be preceded by <!-- test: file NAME -->
//	                            (written to NAME in the copy before the
//	                            page's blocks run) or <!-- test: skip WHY -->
//	<!-- test: skip WHY -->     any block: not run, for the reason given
//	<!-- test: node -->         before a shell block: a node runs as
//	                            `make run` starts it (started once per page,
//	                            in the background, before that block)
//
// Blocks without an info string (usage synopses) and diagrams are not
// commands and are left alone. Every page's shell blocks run as one
// script (set -euo pipefail), so one block's variables reach the next;
// each block is announced on stderr with its line, so a failure names it.
// Whatever the page starts in the background is killed at its end.

// docPages are the pages whose examples run, with how long each may take.
var docPages = []struct {
	path    string
	timeout time.Duration
	limits  bool // its examples ask for CPU and memory limits, which the node must enforce
	engine  bool // its examples run images: they need root and a working podman
}{
	{"README.md", 4 * time.Minute, false, false},
	{"docs/jobspec.md", 3 * time.Minute, true, false},
	{"docs/data.md", 2 * time.Minute, false, false},
	{"docs/operations.md", 2 * time.Minute, false, false},
	{"docs/simulator.md", 2 * time.Minute, false, false},
	{"docs/containers.md", 2 * time.Minute, false, true},
}

// docBlock is one fenced block of a page.
type docBlock struct {
	line int    // of the opening fence, 1-based
	lang string // the info string's first word
	note string // the test: annotation before it, "" for none
	body string
}

var testNote = regexp.MustCompile(`^<!--\s*test:\s*(.*?)\s*-->$`)

// docBlocks reads the fenced blocks of a Markdown page.
func docBlocks(text string) ([]docBlock, error) {
	var out []docBlock
	var cur *docBlock
	var fence, prev string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if cur != nil {
			if trimmed == fence {
				out = append(out, *cur)
				cur = nil
			} else {
				cur.body += line + "\n"
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			info := strings.Fields(strings.TrimLeft(trimmed, "`~"))
			b := &docBlock{line: n}
			if len(info) > 0 {
				b.lang = info[0]
			}
			if m := testNote.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				b.note = m[1]
			}
			cur = b
		}
		if trimmed != "" {
			prev = trimmed
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: a fenced block that never closes", cur.line)
	}
	return out, nil
}

// docScript turns a page's blocks into the files to write and the bash
// script to run; node is whether a block needs the make-run node, and
// before which block's text.
func docScript(page string, blocks []docBlock) (files map[string]string, script string, nodeAt int, err error) {
	files = map[string]string{}
	nodeAt = -1
	var sb strings.Builder
	sb.WriteString("set -euo pipefail\n")
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d", page, b.line)
		verb, arg, _ := strings.Cut(b.note, " ")
		switch {
		case verb == "skip":
			if strings.TrimSpace(arg) == "" {
				return nil, "", 0, fmt.Errorf("%s: skip needs a reason", where)
			}
			continue
		case b.lang == "sh" || b.lang == "bash":
			if verb == "node" {
				if nodeAt < 0 {
					nodeAt = sb.Len()
				}
			} else if b.note != "" {
				return nil, "", 0, fmt.Errorf("%s: unknown annotation %q on a shell block", where, b.note)
			}
			fmt.Fprintf(&sb, "echo '== %s' >&2\n%s", where, b.body)
		case b.lang == "yaml" || b.lang == "yml" || b.lang == "json":
			name := strings.TrimSpace(arg)
			if verb != "file" || name == "" || strings.Contains(name, "..") || filepath.IsAbs(name) {
				return nil, "", 0, fmt.Errorf("%s: a %s block needs <!-- test: file NAME --> (a relative NAME) or <!-- test: skip WHY -->, got %q", where, b.lang, b.note)
			}
			if _, dup := files[name]; dup {
				return nil, "", 0, fmt.Errorf("%s: file %s written twice", where, name)
			}
			files[name] = b.body
		case b.note != "":
			return nil, "", 0, fmt.Errorf("%s: annotation %q on a %q block, which is never run", where, b.note, b.lang)
		}
	}
	return files, sb.String(), nodeAt, nil
}

// TestDocBlocks: the extractor and its rules, on a made-up page.
func TestDocBlocks(t *testing.T) {
	page := "# T\n\n```sh\necho one\n```\n\n<!-- test: file j.yaml -->\n```yaml\nname: j\n```\n\n<!-- test: skip writes /etc -->\n```sh\nrm -rf /\n```\n\n```\nagora get JOB\n```\n\n<!-- test: node -->\n```sh\nagora id\n```\n"
	blocks, err := docBlocks(page)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 5 || blocks[1].note != "file j.yaml" || blocks[2].note != "skip writes /etc" || blocks[3].lang != "" {
		t.Fatalf("blocks: %+v", blocks)
	}
	files, script, nodeAt, err := docScript("p.md", blocks)
	if err != nil {
		t.Fatal(err)
	}
	if files["j.yaml"] != "name: j\n" || strings.Contains(script, "rm -rf") || !strings.Contains(script, "echo one") || nodeAt < 0 || !strings.HasPrefix(script[nodeAt:], "echo '== p.md:22'") {
		t.Fatalf("files %v, node at %d, script:\n%s", files, nodeAt, script)
	}
	for _, bad := range []string{
		"```yaml\nname: j\n```\n",                       // a spec with no file name
		"<!-- test: skip -->\n```sh\necho\n```\n",       // a skip with no reason
		"<!-- test: file ../x -->\n```yaml\nx\n```\n",   // outside the copy
		"<!-- test: frobnicate -->\n```sh\necho\n```\n", // unknown
		"```sh\necho\n", // unclosed
	} {
		blocks, err := docBlocks(bad)
		if err == nil {
			_, _, _, err = docScript("p.md", blocks)
		}
		if err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestDocsRunAsWritten runs every page of docPages.
func TestDocsRunAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the documentation's examples against real nodes")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash to run the examples with")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make: the examples start with make build and make run")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range docPages {
		t.Run(p.path, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join(root, p.path))
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := docBlocks(string(text))
			if err != nil {
				t.Fatalf("%s: %v", p.path, err)
			}
			files, script, nodeAt, err := docScript(p.path, blocks)
			if err != nil {
				t.Fatal(err)
			}
			if want := resource.LimitCPU | resource.LimitMemory; p.limits && taskrt.NewRunner(taskrt.Options{}).Enforces()&want != want {
				t.Skipf("this host enforces no CPU and memory limits on tasks (not root, or no writable cgroup), which %s's examples ask for", p.path)
			}
			if p.engine {
				if os.Geteuid() != 0 {
					t.Skipf("%s's examples run images, which the tests do as root only", p.path)
				}
				if e, err := taskrt.DetectContainerRuntime(context.Background(), taskrt.ContainerPodman); e == nil {
					t.Skipf("%s's examples run podman, which does not work here (make testdeps installs it as root): %v", p.path, err)
				}
			}
			runDocPage(t, root, p.path, files, script, nodeAt, p.timeout)
		})
	}
}

// runDocPage runs one page's script in a fresh copy of the checkout at
// root.
func runDocPage(t *testing.T, root, page string, files map[string]string, script string, nodeAt int, timeout time.Duration) {
	base, err := os.MkdirTemp("", "agora-docs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	// Traversable, as a checkout under /home is: a root node's tasks run
	// under IDs of their own and must reach its data directory.
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(base, "agora")
	copyCheckout(t, root, work)
	for name, body := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The pages under docs/ take agora as installed: the binary make
	// build makes, on PATH. README.md builds it itself (make build, make
	// run).
	if strings.HasPrefix(page, "docs/") {
		if err := copyFile(agoraBin, filepath.Join(work, "bin", "agora")); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(base, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if nodeAt >= 0 {
		// The node `make run` starts, in the background of the page's
		// shell, waited for (its API answers) before the block that needs it.
		script = script[:nodeAt] + "make -s run >make-run.log 2>&1 &\n" +
			"for i in $(seq 600); do bin/agora id >/dev/null 2>&1 && break; sleep 0.2; done\n" +
			"bin/agora id >/dev/null || { echo 'the make run node did not come up:' >&2; cat make-run.log >&2; exit 1; }\n" +
			script[nodeAt:]
		if ln, err := net.Listen("tcp", "127.0.0.1:7700"); err != nil {
			t.Skipf("the default API address 127.0.0.1:7700 is taken (%v): cannot run make run here", err)
		} else {
			ln.Close()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = work
	cmd.Env = append(scrubbedEnv(), "HOME="+home, "PATH="+filepath.Join(work, "bin")+":"+os.Getenv("PATH"))
	// The Go caches stay the test's own: a new HOME would start empty
	// ones, fetching and building every module again.
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		if out, err := exec.Command("go", "env", v).Output(); err == nil {
			cmd.Env = append(cmd.Env, v+"="+strings.TrimSpace(string(out)))
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Start()
	if err == nil {
		// Whatever the page left running in the background goes with it.
		defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
		err = cmd.Wait()
	}
	t.Logf("ran in %v", time.Since(start).Round(time.Millisecond))
	if testing.Verbose() {
		t.Logf("output:\n%s", tail(out.String(), 60))
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %v", timeout)
		}
		nodeLog, _ := os.ReadFile(filepath.Join(work, "make-run.log"))
		t.Fatalf("the page's examples failed: %v\n%s\n--- make run's output:\n%s", err, tail(out.String(), 60), tail(string(nodeLog), 30))
	}
}

// scrubbedEnv is the test's environment without what would point the
// page's commands at another node or token.
func scrubbedEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "PATH", "GOCACHE", "GOMODCACHE", "GOPATH", "AGORA_API", "AGORA_API_TOKEN", "AGORA_TOKEN_DIR", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "DATA", "BIN":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// copyCheckout copies the files git would clone (tracked, and untracked
// ones not ignored) from root to dst.
func copyCheckout(t *testing.T, root, dst string) {
	t.Helper()
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	list, err := ls.Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to copy as a fresh clone", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}
