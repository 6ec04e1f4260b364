package main

import (
	"fmt"
	"io"
	"net/http"
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
	signIn := func() string {
		login, errs, code := agora(t, "dashboard", "--api", a.api)
		login = strings.TrimSpace(login)
		if code != 0 || !strings.Contains(login, "/ui/login#code=") {
			t.Fatalf("agora dashboard: %d %q %s", code, login, errs)
		}
		return login
	}
	login := signIn() // one browser, one code: each browse is a new profile
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
	next := strings.Replace(signIn(), "/ui/login#", "/ui/login?next="+m[1]+"#", 1)
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
	// Without a session the pages send the browser to sign in; a used
	// code signs no one in.
	if dom := browse(t, bin, fmt.Sprintf("http://%s/ui/", a.api), ""); !strings.Contains(dom, "agora dashboard") || strings.Contains(dom, ids[0]) {
		t.Fatalf("the overview without a session:\n%s", dom)
	}
	if dom := browse(t, bin, login, ""); !strings.Contains(dom, "used or expired") || strings.Contains(dom, ids[0]) {
		t.Fatalf("the sign-in page with a used code:\n%s", dom)
	}
	t.Logf("screenshots in %s", shots)
}

// session signs in to p's dashboard with the address agora dashboard
// printed (args: its flags) and returns the session cookie.
func session(t *testing.T, p *proc, args ...string) *http.Cookie {
	t.Helper()
	out, errs, code := agora(t, append([]string{"dashboard", "--api", p.api}, args...)...)
	_, c, ok := strings.Cut(strings.TrimSpace(out), "/ui/login#code=")
	if code != 0 || !ok {
		t.Fatalf("agora dashboard: %d %q %s", code, out, errs)
	}
	req, _ := http.NewRequest("POST", "http://"+p.api+"/ui/session", strings.NewReader(`{"code": "`+c+`"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(resp.Cookies()) != 1 {
		t.Fatalf("trading the code: %d %v", resp.StatusCode, resp.Cookies())
	}
	return resp.Cookies()[0]
}

// uiGet reads a dashboard page with a session cookie and extra headers,
// without following redirects.
func uiGet(t *testing.T, p *proc, path string, ck *http.Cookie, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+p.api+path, nil)
	if ck != nil {
		req.AddCookie(ck)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDashboardSession (issue 43, done-when 3), on the real binary, two
// nodes on one host: the session cookie is HttpOnly and named for its
// node; another node refuses it (under either name), and the node
// refuses it on a request from another port of the host; in a network
// with an authority a user's session shows the user's jobs and not
// another user's, and without one the pages send the browser to sign in.
func TestDashboardSession(t *testing.T) {
	nodes, ids := startThree(t, "cpu: 2\nmemory: 4GiB\ngpus: []\n")
	a, b := nodes[0], nodes[1]
	ck := session(t, a)
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || !strings.HasPrefix(ck.Name, "agora_ui_") {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, named agora_ui_…", ck)
	}
	if code, body := uiGet(t, a, "/ui/", ck); code != 200 || !strings.Contains(body, ids[1]) {
		t.Fatalf("A's overview with A's session: %d", code)
	}
	bck := session(t, b)
	if bck.Name == ck.Name {
		t.Fatalf("two nodes on one host name their session cookies alike (%s)", ck.Name)
	}
	for _, c := range []*http.Cookie{ck, {Name: bck.Name, Value: ck.Value}} {
		if code, _ := uiGet(t, b, "/ui/", c); code != 303 {
			t.Errorf("B with A's session as %s: %d, want 303 to sign in", c.Name, code)
		}
	}
	for _, h := range [][]string{{"Sec-Fetch-Site", "same-site"}, {"Origin", "http://127.0.0.1:1"}} {
		if code, body := uiGet(t, a, "/ui/", ck, h...); code != 403 || !strings.Contains(body, "another origin") {
			t.Errorf("A's session on a request with %s: %d %s, want 403", h, code, body)
		}
	}
	if code, _ := uiGet(t, a, "/v1/jobs", ck); code != 401 {
		t.Errorf("the API with a session and no token: %d, want 401", code)
	}

	ca := newCA(t)
	tn := trustedNode(t, ca, "--resources", writeFile(t, "r.yaml", "cpu: 2\nmemory: 4GiB\ngpus: []\n"))
	cred := addUsers(t, ca, "alice", "bob")
	jobs := jobsOf(t, tn, cred, "alice", "bob")
	if code, _ := uiGet(t, tn, "/ui/", nil); code != 303 {
		t.Errorf("a trust-mode page without a session: %d, want 303", code)
	}
	if _, errs, code := agora(t, "dashboard", "--api", tn.api); code == 0 {
		t.Errorf("agora dashboard without a credential in a network with an authority succeeded: %s", errs)
	}
	ack := session(t, tn, "--credential", cred["alice"])
	code, body := uiGet(t, tn, "/ui/", ack)
	if code != 200 || !strings.Contains(body, `data-job="`+jobs["alice"]+`"`) || strings.Contains(body, jobs["bob"]) {
		t.Fatalf("alice's overview: %d; want her job %s and not bob's %s:\n%s", code, jobs["alice"], jobs["bob"], body)
	}
	if code, body := uiGet(t, tn, "/ui/jobs/"+jobs["bob"], ack); code != 200 || !strings.Contains(body, "owner-or-admin") || strings.Contains(body, `id="events"`) {
		t.Errorf("alice's page of bob's job: %d; want its summary, the rule named and no event log:\n%s", code, body)
	}
	if code, body := uiGet(t, tn, "/ui/jobs/"+jobs["alice"], ack); code != 200 || strings.Contains(body, "owner-or-admin") || !strings.Contains(body, `id="events"`) {
		t.Errorf("alice's page of her own job: %d; want its detail and event log:\n%s", code, body)
	}
}

// jobsOf runs a small job (named USER-job) as each of users on n and
// returns their job IDs by user.
func jobsOf(t *testing.T, n *proc, cred map[string]string, users ...string) map[string]string {
	t.Helper()
	jobs := map[string]string{}
	for _, name := range users {
		out, errs, code := agora(t, "run", "--api", n.api, "--credential", cred[name], "--name", name+"-job", "--cpu", "100m", "--", "true")
		if code != 0 {
			t.Fatalf("%s's run: %s", name, errs)
		}
		jobs[name] = strings.TrimSpace(out)
	}
	return jobs
}
