package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestDashboardActs (issue 47, done-when 3): in headless Chromium, signed
// in with the node's API token, a user submits a spec through the
// dashboard's form, sees it run to its end, downloads its output (the
// same bytes the task wrote), runs it again, and cancels another job from
// its page; a bad spec comes back with the CLI's words for what is wrong.
// In a network with an authority a user signs in with her credential,
// sees her own jobs and not another user's, and her session reads only:
// its actions are refused.
func TestDashboardActs(t *testing.T) {
	bin := chromium(t)
	n := startNode(t, t.TempDir())
	login, errs, code := agora(t, "dashboard", "--api", n.api)
	if code != 0 {
		t.Fatalf("agora dashboard: %s", errs)
	}
	page := newCDPPage(t, bin)
	page.open(strings.TrimSpace(login), "/ui/")
	if page.str(`document.getElementById("submit-link") ? "yes" : "no"`) != "yes" {
		t.Fatal("the overview offers no way to submit")
	}
	// The charts start from the history the node keeps (a sample at its
	// start, then every 10 s), not empty.
	waitfor.Every(t, 15*time.Second, 100*time.Millisecond, "the charts' history", func() bool {
		return page.str(`document.getElementById("c-cpu").getAttribute("data-points") || "0"`) != "0"
	})
	if hist := page.str(`fetch("/ui/history?window=24h", {credentials: "same-origin"}).then(r => r.text())`); !strings.HasPrefix(hist, "[[") {
		t.Errorf("/ui/history: %q", hist)
	}

	// Submit through the form; the page moves to the new job's.
	const want = "made by the dashboard job\n"
	specText := "name: from-the-dashboard\ntasks:\n  - name: make\n    command: \"printf 'made by the dashboard job\\\\n' > out.txt\"\n    outputs: [out.txt]\n"
	page.open("http://"+n.api+"/ui/submit", "/ui/submit")
	page.eval(`document.querySelector("textarea[name=spec]").value = `+jsString(specText)+`; document.getElementById("submit").submit(); true`, nil)
	waitfor.Every(t, 30*time.Second, 50*time.Millisecond, "the submitted job's page", func() bool {
		p := page.loaded()
		if p == "/ui/act/submit" {
			t.Fatalf("the form came back: %s", page.str(`document.body.innerText`))
		}
		return strings.HasPrefix(p, "/ui/jobs/")
	})
	id := strings.TrimPrefix(page.str(`location.pathname`), "/ui/jobs/")
	var st jobStatus
	waitfor.Every(t, 60*time.Second, apiPoll, "the dashboard's job to end", func() bool {
		st = e2eStatus(t, n.api, id)
		return terminal(st.State)
	})
	if st.State != "succeeded" || st.Name != "from-the-dashboard" {
		t.Fatalf("the dashboard's job: %s %s (%s)", st.Name, st.State, st.Reason)
	}

	// Its page links the output; the browser downloads it in the session.
	page.open("http://"+n.api+"/ui/jobs/"+id, "/ui/jobs/"+id)
	href := page.str(`(document.querySelector("#outputs a.download") || {}).href || ""`)
	if !strings.HasSuffix(href, "/outputs/make/0.tar.gz") {
		t.Fatalf("the job page links no output (%q)", href)
	}
	b64 := page.str(`fetch(` + jsString(href) + `, {credentials: "same-origin"}).then(r => r.ok ? r.arrayBuffer() : Promise.reject(r.status)).then(b => { let s = ""; new Uint8Array(b).forEach(c => s += String.fromCharCode(c)); return btoa(s); })`)
	archive, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	if got := untarFile(t, archive, "out.txt"); got != want {
		t.Fatalf("the downloaded output holds %q, the task wrote %q", got, want)
	}

	// Run it again from its page: a new job, the same spec.
	page.eval(`document.getElementById("rerun").click(); true`, nil)
	waitfor.Every(t, 30*time.Second, 50*time.Millisecond, "the page of the re-run", func() bool {
		p := page.loaded()
		return strings.HasPrefix(p, "/ui/jobs/") && p != "/ui/jobs/"+id
	})
	again := strings.TrimPrefix(page.str(`location.pathname`), "/ui/jobs/")
	waitfor.Every(t, 60*time.Second, apiPoll, "the re-run to end", func() bool { return terminal(e2eStatus(t, n.api, again).State) })
	if st := e2eStatus(t, n.api, again); st.State != "succeeded" || st.Name != "from-the-dashboard" {
		t.Fatalf("the re-run: %s %s", st.Name, st.State)
	}

	// Cancel another job from its page.
	out, errs, code := agora(t, "run", "--api", n.api, "--json", "--", "sleep", "300")
	if code != 0 {
		t.Fatalf("run: %s", errs)
	}
	long := jobID(out)
	waitfor.Every(t, 30*time.Second, apiPoll, "the long job to run", func() bool { return e2eStatus(t, n.api, long).State == "running" })
	page.open("http://"+n.api+"/ui/node", "/ui/node")
	if running := page.str(`document.getElementById("running").textContent`); !strings.Contains(running, long) {
		t.Errorf("the node page does not list the task it runs (%s): %q", long, running)
	}
	if ended := page.str(`Array.from(document.querySelectorAll("#recent tr.attempt")).map(r => r.getAttribute("data-job") + " " + r.querySelector(".state").textContent).join(",")`); !strings.Contains(ended, id+" succeeded") || !strings.Contains(ended, again+" succeeded") {
		t.Errorf("the node page's recent attempts %q lack the dashboard's job %s and its re-run %s", ended, id, again)
	}
	page.open("http://"+n.api+"/ui/jobs/"+long, "/ui/jobs/"+long)
	page.eval(`document.getElementById("cancel").click(); true`, nil)
	waitfor.Every(t, 30*time.Second, apiPoll, "the job cancelled from the dashboard", func() bool { return e2eStatus(t, n.api, long).State == "cancelled" })

	// The job table refreshes itself, newest first, and filters by state.
	page.open("http://"+n.api+"/ui/", "/ui/")
	out, errs, code = agora(t, "run", "--api", n.api, "--json", "--name", "appears-live", "--", "true")
	if code != 0 {
		t.Fatalf("run: %s", errs)
	}
	fresh := jobID(out)
	waitfor.Every(t, 20*time.Second, 200*time.Millisecond, "the new job in the table, without a reload", func() bool {
		return page.str(`document.querySelector("#jobs tr.job") ? document.querySelector("#jobs tr.job").getAttribute("data-job") : ""`) == fresh
	})
	page.eval(`var s = document.getElementById("state-filter"); s.value = "cancelled"; s.dispatchEvent(new Event("change")); true`, nil)
	if shown := page.str(`Array.from(document.querySelectorAll("#jobs tr.job")).filter(r => r.style.display !== "none").map(r => r.getAttribute("data-job")).join(",")`); shown != long {
		t.Errorf("the cancelled jobs shown: %q, want %s", shown, long)
	}

	// The node page says when the node is drained.
	if _, errs, code := agora(t, "drain", "--api", n.api); code != 0 {
		t.Fatalf("drain: %s", errs)
	}
	page.open("http://"+n.api+"/ui/node", "/ui/node")
	if page.str(`document.getElementById("drained") ? "drained" : ""`) != "drained" {
		t.Error("the node page does not say the node is drained")
	}
	if _, errs, code := agora(t, "undrain", "--api", n.api); code != 0 {
		t.Fatalf("undrain: %s", errs)
	}

	// A bad spec: the form again, saying what is wrong as agora submit does.
	page.open("http://"+n.api+"/ui/submit", "/ui/submit")
	page.eval(`document.querySelector("textarea[name=spec]").value = "name: bad\ntasks:\n  - name: t\n    comand: [true]\n"; document.getElementById("submit").submit(); true`, nil)
	waitfor.Every(t, 30*time.Second, 50*time.Millisecond, "the form's answer", func() bool {
		return page.loaded() == "/ui/act/submit" && page.str(`(document.querySelector(".problem") || {}).textContent || ""`) != ""
	})
	if p := page.str(`Array.from(document.querySelectorAll(".problem")).map(e => e.textContent).join("\n")`); !strings.Contains(p, `tasks[0].comand: unknown field (did you mean "command"?)`) || !strings.Contains(p, "tasks[0].command: required") {
		t.Errorf("the bad spec's problem reads %q", p)
	}

	// An action without the dashboard's Origin (a page elsewhere, a
	// script) is refused, session or not.
	ck := session(t, n)
	req, _ := http.NewRequest("POST", "http://"+n.api+"/ui/act/jobs/"+id+"/rerun", nil)
	req.AddCookie(ck)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("an action without an Origin: %d, want 403", resp.StatusCode)
	}

	// With an authority, a user signs in with her credential and sees her
	// own jobs, not another user's; her session reads and does not act.
	ca := newCA(t)
	cred := addUsers(t, ca, "alice", "bob")
	tn := trustedNode(t, ca)
	owned := jobsOf(t, tn, cred, "alice", "bob")
	login, errs, code = agora(t, "dashboard", "--api", tn.api, "--credential", cred["alice"])
	if code != 0 {
		t.Fatalf("agora dashboard --credential: %s", errs)
	}
	page.open(strings.TrimSpace(login), "/ui/")
	rows := page.str(`Array.from(document.querySelectorAll("#jobs tr.job")).map(r => r.getAttribute("data-job")).join(",")`)
	if rows != owned["alice"] {
		t.Errorf("alice's signed-in overview lists %q, want only her job %s (bob's is %s)", rows, owned["alice"], owned["bob"])
	}
	if page.str(`document.getElementById("submit-link") ? "yes" : "no"`) != "no" {
		t.Error("a reading session's overview offers to submit")
	}
	page.open("http://"+tn.api+"/ui/jobs/"+owned["bob"], "/ui/jobs/"+owned["bob"])
	if body := page.str(`document.body.innerText`); !strings.Contains(body, "owner-or-admin") || page.str(`document.getElementById("events") ? "yes" : "no"`) != "no" {
		t.Errorf("alice's page of bob's job shows his detail or does not name the rule:\n%s", body)
	}
	ck = session(t, tn, "--credential", cred["alice"])
	req, _ = http.NewRequest("POST", "http://"+tn.api+"/ui/act/submit", strings.NewReader("spec=name%3A+x"))
	req.AddCookie(ck)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://"+tn.api)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "reads only") {
		t.Errorf("a user's session acting: %d %s, want 403", resp.StatusCode, body)
	}
	if code, body := uiGet(t, tn, "/ui/", ck); code != 200 || strings.Contains(body, "submit-link") {
		t.Errorf("a reading session's overview offers to submit (%d)", code)
	}

}

// jsString quotes s as a JavaScript string literal (JSON's is one).
func jsString(s string) string {
	var b bytes.Buffer
	enc := jsonEncoder(&b)
	_ = enc.Encode(s)
	return strings.TrimSpace(b.String())
}

// untarFile reads one file from a .tar.gz.
func untarFile(t *testing.T, archive []byte, name string) string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatalf("the download is not gzip: %v", err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("the archive has no %s", name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			b, _ := io.ReadAll(tr)
			return string(b)
		}
	}
}
