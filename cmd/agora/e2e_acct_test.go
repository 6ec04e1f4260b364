package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agora-sched/agora/market/acct"
	"github.com/agora-sched/agora/node/api"
	"github.com/agora-sched/agora/testnet/waitfor"
)

// burnAndCount burns CPU in a child shell, then prints, from the shell
// that waited for it, its children's CPU time (`times`): the task's own
// count, which its accounting record must match.
const burnAndCount = `sh -c 'i=0; while [ $i -lt 1200000 ]; do i=$((i+1)); done'; times`

// childCPU is the children's user plus system time in `times` output.
func childCPU(t *testing.T, out string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$`).FindAllStringSubmatch(out, -1)
	if len(m) < 2 {
		t.Fatalf("no `times` lines in %q", out)
	}
	var s float64
	for _, i := range []int{1, 3} {
		mins, _ := strconv.ParseFloat(m[1][i], 64)
		secs, _ := strconv.ParseFloat(m[1][i+1], 64)
		s += mins*60 + secs
	}
	return s
}

// acctRows is `agora acct --json` against node p with credential cred.
func acctRows(t *testing.T, p *proc, cred string, args ...string) []acct.Attempt {
	t.Helper()
	out, errs, code := agora(t, append([]string{"acct", "--api", p.api, "--credential", cred, "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("agora acct: exit %d: %s", code, errs)
	}
	var rows []acct.Attempt
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("agora acct --json: %v in %q", err, out)
	}
	return rows
}

// usersNetwork starts three nodes of 2 cores with an authority, as a
// user runs them, with extra flags, and returns them and the
// credentials of users alice and bob and of carol, an admin.
func usersNetwork(t *testing.T, flags ...string) (map[string]string, []*proc) {
	t.Helper()
	ca := newCA(t)
	cred := addUsers(t, ca, "alice", "bob")
	cred["carol"] = filepath.Join(t.TempDir(), "carol.cred")
	if _, errs, code := agora(t, "user", "add", "--authority", ca, "carol", "--admin", "--out", cred["carol"]); code != 0 {
		t.Fatalf("user add carol: %s", errs)
	}
	res := writeFile(t, "r.yaml", "cpu: 2\nmemory: 4GiB\ngpus: []\n")
	flags = append([]string{"--resources", res}, flags...)
	a := trustedNode(t, ca, flags...)
	b := trustedNode(t, ca, append(flags, "--bootstrap", tcpAddr(t, a.id()))...)
	c := trustedNode(t, ca, append(flags, "--bootstrap", tcpAddr(t, a.id()))...)
	seeEachOther(t, a, b)
	seeEachOther(t, a, c)
	seeEachOther(t, b, c)
	return cred, []*proc{a, b, c}
}

// TestE2EAccounting: three nodes with an authority, as a user runs them.
// alice's and bob's jobs run anywhere; from any node an admin's `agora
// acct` lists every attempt, joined from its executor's and its
// manager's records, with CPU-seconds within 5 % of what the task itself
// counted; alice sees only hers; `agora report` adds the users' hours up
// to the attempts'; the records outlive the jobs' retention and a kill
// -9 of an executor.
func TestE2EAccounting(t *testing.T) {
	cred, nodes := usersNetwork(t, "--job-retention", "6s", "--site", "lab")
	a, b, c := nodes[0], nodes[1], nodes[2]

	type run struct {
		user, job string
		counted   float64 // CPU-seconds the task counted itself
	}
	var runs []run
	for i, user := range []string{"alice", "bob", "alice", "bob", "alice"} {
		out, errs, code := agora(t, "run", "--api", nodes[i%3].api, "--credential", cred[user], "--wait", "--", "sh", "-c", burnAndCount)
		if code != 0 {
			t.Fatalf("%s's run: exit %d: %s", user, code, errs)
		}
		job := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(errs), "job "))
		runs = append(runs, run{user: user, job: job, counted: childCPU(t, out)})
	}

	// From every node, the admin sees every attempt, attested by both
	// nodes (the records travel after the exit: waited for).
	byJob := map[string]acct.Attempt{}
	for _, p := range nodes {
		waitfor.Every(t, 20*time.Second, apiPoll, "every attempt attested by its executor and manager, from "+p.api, func() bool {
			rows := acctRows(t, p, cred["carol"])
			clear(byJob)
			for _, r := range rows {
				if r.Attested == "both" {
					byJob[r.Job] = r
				}
			}
			return len(byJob) == len(runs)
		})
	}
	for _, r := range runs {
		row := byJob[r.job]
		t.Logf("%s %s on %s: counted %.3f s, accounted %.3f s (%s), wait %.3f s, max rss %d", r.user, r.job, shortID(string(row.Node)), r.counted, row.CPUSeconds, row.Source, row.Wait, row.MaxRSS)
		if row.User != r.user || row.State != "succeeded" || row.Attempt != 1 || row.Wait < 0 || row.Elapsed <= 0 || row.Site != "lab" {
			t.Fatalf("row of %s's job: %+v", r.user, row)
		}
		if row.Source != acct.SourceCgroup && row.Source != acct.SourceRusage {
			t.Fatalf("CPU not measured: %+v", row)
		}
		if r.counted < 0.1 {
			t.Fatalf("the task counted %.3f s: the check would mean nothing", r.counted)
		}
		if d := math.Abs(row.CPUSeconds - r.counted); d > 0.05*r.counted+0.03 {
			t.Fatalf("%s: accounted %.3f CPU-seconds, the task counted %.3f", r.job, row.CPUSeconds, r.counted)
		}
	}

	// alice sees her own attempts only, from a node that ran none of
	// them or all alike.
	for _, row := range acctRows(t, c, cred["alice"]) {
		if row.User != "alice" {
			t.Fatalf("alice sees %s's attempt %+v", row.User, row)
		}
	}
	if rows := acctRows(t, b, cred["carol"], "--user", "bob", "--state", "succeeded"); len(rows) != 2 {
		t.Fatalf("bob's succeeded attempts: %d rows, want 2", len(rows))
	}

	// The report's per-user hours add up to the attempts'.
	out, errs, code := agora(t, "report", "--api", b.api, "--credential", cred["carol"], "--json")
	if code != 0 {
		t.Fatalf("agora report: exit %d: %s", code, errs)
	}
	var rep api.ReportAnswer
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, r := range runs {
		want[r.user] += byJob[r.job].CPUSeconds / 3600
	}
	if len(rep.Users) != 2 {
		t.Fatalf("report users %+v", rep.Users)
	}
	for _, u := range rep.Users {
		if math.Abs(u.CPUHours-want[u.Name]) > 1e-9 || u.Jobs != map[string]int{"alice": 3, "bob": 2}[u.Name] {
			t.Fatalf("report for %s: %+v, want %.6f CPU-hours", u.Name, u, want[u.Name])
		}
	}
	if rep.Jain <= 0.5 || rep.Jain > 1 || rep.Throughput <= 0 || rep.Utilization <= 0 {
		t.Fatalf("report %+v", rep.Report)
	}

	// The jobs' retention passes: their records are forgotten, their
	// accounting is not.
	waitfor.Every(t, 30*time.Second, apiPoll, "the first job forgotten", func() bool {
		_, _, code := agora(t, "status", "--api", nodes[0].api, "--credential", cred["carol"], runs[0].job)
		return code != 0
	})
	if rows := acctRows(t, a, cred["carol"], "--job", runs[0].job); len(rows) != 1 || rows[0].Attested != "both" {
		t.Fatalf("after the job's retention, its accounting: %+v", rows)
	}

	// The executor of the first attempt is killed: the others still
	// list its attempt, from the copies it pushed.
	ran := byJob[runs[0].job].Node
	var rest []*proc
	for _, p := range nodes {
		if p.id().PeerID == string(ran) {
			p.kill()
		} else {
			rest = append(rest, p)
		}
	}
	if len(rest) != 2 {
		t.Fatalf("no node is %s", ran)
	}
	for _, p := range rest {
		rows := acctRows(t, p, cred["carol"], "--job", runs[0].job)
		if len(rows) != 1 || rows[0].CPUSeconds != byJob[runs[0].job].CPUSeconds || rows[0].Attested != "both" {
			t.Fatalf("after its executor was killed, %s lists %+v", p.api, rows)
		}
	}
}
