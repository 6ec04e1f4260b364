package main

import (
	"strings"
	"testing"
)

// TestRunWaitStreams (issue 26, done-when 3, real binary and node):
// `agora run --wait -- sh -c 'echo out; echo err >&2; exit 3'` prints
// out on stdout and err on stderr, and exits 3.
func TestRunWaitStreams(t *testing.T) {
	p := startNode(t, t.TempDir())
	out, errs, code := agora(t, "run", "--api", p.api, "--retries", "0", "--wait", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	if code != 3 {
		t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s\nnode:\n%s", code, out, errs, tail(p.log.String(), 30))
	}
	if out != "out\n" {
		t.Fatalf("stdout %q, want %q (stderr:\n%s)", out, "out\n", errs)
	}
	if !strings.Contains(errs, "\nerr\n") || strings.Contains(errs, "out") {
		t.Fatalf("stderr does not hold the task's standard error alone:\n%s", errs)
	}
	// With the default retries, each attempt's output comes again, under
	// a header on stderr, and the exit code is the last attempt's.
	out, errs, code = agora(t, "run", "--api", p.api, "--retries", "1", "--wait", "--", "sh", "-c", "echo out; echo err >&2; exit 4")
	if code != 4 || strings.Count(out, "out\n") != 2 || strings.Count(errs, "err\n") != 2 || !strings.Contains(errs, "==> main[0] (attempt 2 on ") {
		t.Fatalf("with a retry: exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	// A job that succeeds exits 0 and prints only its output on stdout.
	out, errs, code = agora(t, "run", "--api", p.api, "--wait", "--", "echo", "hello")
	if code != 0 || out != "hello\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
}
