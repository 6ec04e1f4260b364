package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// chromium finds a headless browser, or skips the test.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium: make test installs the distribution's package when run as root")
	return ""
}

// browse loads url in headless Chromium and returns the page's DOM after
// its script ran, failing the test on any console message (the pages
// write none: a message is an error, a failed request or an exception).
// With shot set, it also saves a screenshot there.
func browse(t *testing.T, bin, url, shot string) string {
	t.Helper()
	args := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0", "--virtual-time-budget=4000", "--window-size=1400,1000"}
	out, err := exec.Command(bin, append(args, "--dump-dom", url)...).Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr)
	}
	if shot != "" {
		cmd := exec.Command(bin, append(args, "--screenshot="+shot, url)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("chromium screenshot: %v\n%s", err, b)
		}
	}
	// --dump-dom's stderr: run again for it (Output keeps stderr only on
	// failure).
	cmd := exec.Command(bin, append(args, "--dump-dom", url)...)
	var errb strings.Builder
	cmd.Stderr = &errb
	_ = cmd.Run()
	for _, line := range strings.Split(errb.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			t.Errorf("console message on %s: %s", url, line)
		}
	}
	return string(out)
}

// TestDashboard (issue 26, done-when 4): a headless Chromium loads the
// dashboard of a three-node network, finds every peer and every job
// (those managed elsewhere too) in the rendered page, follows a job to
// its task graph, placement history and logs, and saves screenshots; any
// console message fails it.
func TestDashboard(t *testing.T) {
	bin := chromium(t)
	nodes, ids := startThree(t, "cpu: 2\nmemory: 4GiB\ngpus: []\ndevices:\n  - {kind: fpga, model: u250, count: 1}\n")
	a, b, c := nodes[0], nodes[1], nodes[2]
	spec := writeFile(t, "dag.yaml", "name: pipeline\ntasks:\n  - name: fetch\n    command: \"echo 'fetched-<data>'\"\n  - name: train\n    command: \"echo trained; echo warn >&2\"\n    after: [fetch]\n  - name: eval\n    command: \"echo evaluated\"\n    after: [train]\n")
	var jobs []string
	for _, n := range []*proc{b, c} { // managed by B and C; the browser asks A
		out, errs, code := agora(t, "submit", "--api", n.api, "--wait", "--json", spec)
		if code != 0 {
			t.Fatalf("submit: %s %s", out, errs)
		}
		jobs = append(jobs, jobID(out))
	}
	login, _, code := agora(t, "dashboard", "--api", a.api)
	login = strings.TrimSpace(login)
	if code != 0 || !strings.Contains(login, "/ui/login#token=") {
		t.Fatalf("agora dashboard: %d %q", code, login)
	}
	shots := t.ArtifactDir()
	if d := os.Getenv("AGORA_SCREENSHOTS"); d != "" {
		shots = d
	}
	dom := browse(t, bin, login, filepath.Join(shots, "dashboard.png"))
	for i, id := range ids {
		if !strings.Contains(dom, `data-peer="`+id+`"`) {
			t.Errorf("the overview does not show node %d (%s)", i, id)
		}
	}
	if !strings.Contains(dom, "fpga u250: 1 of 1 free") {
		t.Errorf("the overview does not show the declared FPGA")
	}
	for _, j := range jobs {
		if !strings.Contains(dom, `data-job="`+j+`"`) {
			t.Errorf("the overview does not list job %s", j)
		}
	}
	if t.Failed() {
		t.Fatalf("overview DOM:\n%s", dom)
	}
	// Follow the first job's link from the page itself.
	m := regexp.MustCompile(`href="(/ui/jobs/[^"]+)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no job link in the overview:\n%s", dom)
	}
	next := strings.Replace(login, "/ui/login#", "/ui/login?next="+m[1]+"#", 1)
	jdom := browse(t, bin, next, filepath.Join(shots, "job.png"))
	for _, task := range []string{"fetch", "train", "eval"} {
		if !strings.Contains(jdom, `data-task="`+task+`"`) {
			t.Errorf("the job page's graph lacks task %s", task)
		}
	}
	if strings.Count(jdom, "marker-end") != 2 {
		t.Errorf("the graph has %d edges, want 2", strings.Count(jdom, "marker-end"))
	}
	for _, want := range []string{"fetched-&lt;data&gt;", "trained", "warn", "evaluated", `id="attempts"`, "succeeded"} {
		if !strings.Contains(jdom, want) {
			t.Errorf("the job page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("job page DOM:\n%s", jdom)
	}
	// Without the token the pages send the browser to sign in.
	if dom := browse(t, bin, fmt.Sprintf("http://%s/ui/", a.api), ""); !strings.Contains(dom, "agora dashboard") || strings.Contains(dom, ids[0]) {
		t.Fatalf("the overview without a token:\n%s", dom)
	}
	t.Logf("screenshots in %s", shots)
}
