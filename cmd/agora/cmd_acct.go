package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agora-sched/agora/market/acct"
	"github.com/agora-sched/agora/node/api"
)

func init() {
	register("acct", "list the accounting records of task attempts (like sacct), from every live peer", cmdAcct)
	register("report", "sum accounting per user and site over a period (like sreport): CPU- and GPU-hours, waits, fairness", cmdReport)
}

// acctField is one column of `agora acct`: its name (sacct's where one
// fits) and how a row shows it.
type acctField struct {
	name string
	get  func(a *acct.Attempt) string
}

func secs(s float64) string {
	if s < 0 {
		return ""
	}
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// acctFields are the columns, in the order --format=all prints them.
var acctFields = []acctField{
	{"JobID", func(a *acct.Attempt) string { return a.Job }},
	{"JobName", func(a *acct.Attempt) string { return a.Name }},
	{"Task", func(a *acct.Attempt) string { return a.Task }},
	{"Replica", func(a *acct.Attempt) string { return strconv.Itoa(a.Replica) }},
	{"Attempt", func(a *acct.Attempt) string { return strconv.Itoa(a.Attempt) }},
	{"Epoch", func(a *acct.Attempt) string { return strconv.FormatUint(a.Epoch, 10) }},
	{"User", func(a *acct.Attempt) string { return a.User }},
	{"Site", func(a *acct.Attempt) string { return a.Site }},
	{"Node", func(a *acct.Attempt) string { return string(a.Node) }},
	{"Manager", func(a *acct.Attempt) string { return string(a.Manager) }},
	{"Type", func(a *acct.Attempt) string { return a.Type }},
	{"State", func(a *acct.Attempt) string { return a.State }},
	{"ExitCode", func(a *acct.Attempt) string { return strconv.Itoa(a.ExitCode) }},
	{"Reason", func(a *acct.Attempt) string { return a.Reason }},
	{"Submit", func(a *acct.Attempt) string { return stamp(a.Submit) }},
	{"Eligible", func(a *acct.Attempt) string { return stamp(a.Eligible) }},
	{"Start", func(a *acct.Attempt) string { return stamp(a.Start) }},
	{"End", func(a *acct.Attempt) string { return stamp(a.End) }},
	{"Elapsed", func(a *acct.Attempt) string { return secs(a.Elapsed) }},
	{"Wait", func(a *acct.Attempt) string { return secs(a.Wait) }},
	{"AllocCPUS", func(a *acct.Attempt) string { return strconv.FormatFloat(a.AllocCPUs, 'f', -1, 64) }},
	{"ReqMem", func(a *acct.Attempt) string { return strconv.FormatInt(a.ReqMem, 10) }},
	{"AllocGPUs", func(a *acct.Attempt) string { return strconv.Itoa(a.AllocGPUs) }},
	{"TotalCPU", func(a *acct.Attempt) string { return strconv.FormatFloat(a.CPUSeconds, 'f', 3, 64) }},
	{"MaxRSS", func(a *acct.Attempt) string { return strconv.FormatInt(a.MaxRSS, 10) }},
	{"GPUSeconds", func(a *acct.Attempt) string { return strconv.FormatFloat(a.GPUSeconds, 'f', 1, 64) }},
	{"Source", func(a *acct.Attempt) string { return a.Source }},
	{"Attested", func(a *acct.Attempt) string { return a.Attested }},
}

const defaultAcctFormat = "JobID,Task,Replica,Attempt,User,Site,Node,State,ExitCode,Start,Elapsed,Wait,AllocCPUS,TotalCPU,MaxRSS"

// parseAcctFormat is the columns --format names (case does not matter;
// "all" is every one).
func parseAcctFormat(s string) ([]acctField, error) {
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		return acctFields, nil
	}
	var out []acctField
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, f := range acctFields {
			if strings.EqualFold(f.name, name) {
				out = append(out, f)
				found = true
				break
			}
		}
		if !found {
			names := make([]string, len(acctFields))
			for i, f := range acctFields {
				names[i] = f.name
			}
			return nil, fmt.Errorf("--format: no field %q (fields: %s, or all)", name, strings.Join(names, ","))
		}
	}
	return out, nil
}

// parseWhen reads --since and --until: an RFC 3339 time, a date
// (2026-12-01, UTC midnight), or a duration back from now (24h, 7d).
func parseWhen(flagName, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t, nil
	}
	if d, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.ParseFloat(d, 64); err == nil && n >= 0 {
			return now.Add(-time.Duration(n * float64(24*time.Hour))), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--%s %q: want an RFC 3339 time, a date (2026-12-01) or a duration back from now (24h, 7d)", flagName, v)
}

// acctFilterFlags are the filters acct and report share.
type acctFilterFlags struct {
	job, user, site, node, state, since, until *string
}

func addAcctFilterFlags(fs *flag.FlagSet) acctFilterFlags {
	return acctFilterFlags{
		job:   fs.String("job", "", "only this job's attempts"),
		user:  fs.String("user", "", "only this user's attempts"),
		site:  fs.String("site", "", "only attempts run at this site"),
		node:  fs.String("node", "", "only attempts run on this node (its peer ID or the start of it)"),
		state: fs.String("state", "", "only attempts that ended so: succeeded, failed, cancelled or preempted"),
		since: fs.String("since", "", "only attempts that ended at or after: an RFC 3339 time, a date (2026-12-01) or a duration back from now (24h, 7d)"),
		until: fs.String("until", "", "only attempts that ended before (as --since)"),
	}
}

// query is the API query string the filters make, checked.
func (f acctFilterFlags) query(now time.Time) (string, error) {
	q := url.Values{}
	for k, v := range map[string]string{"job": *f.job, "user": *f.user, "site": *f.site, "node": *f.node, "state": *f.state} {
		if v != "" {
			q.Set(k, v)
		}
	}
	for _, w := range []struct{ name, v string }{{"since", *f.since}, {"until", *f.until}} {
		t, err := parseWhen(w.name, w.v, now)
		if err != nil {
			return "", err
		}
		if !t.IsZero() {
			q.Set(w.name, t.UTC().Format(time.RFC3339Nano))
		}
	}
	if _, err := api.ParseAcctFilter(q); err != nil {
		return "", fmt.Errorf("--%s", err)
	}
	if len(q) == 0 {
		return "", nil
	}
	return "?" + q.Encode(), nil
}

// getAcct asks the node at apiAddr for path, printing why it failed and
// returning the exit code.
func getAcct(cmd, apiAddr, path string, out any, stderr io.Writer) int {
	if err := newClient(apiAddr).do("GET", path, nil, out); err != nil {
		fmt.Fprintf(stderr, "agora %s: %v\n", cmd, err)
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == 400 {
			return exitBadUsage
		}
		return exitFailed
	}
	return exitOK
}

func cmdAcct(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("acct", stdout, stderr)
	apiAddr := apiFlag(fs)
	cred := credentialFlag(fs)
	filters := addAcctFilterFlags(fs)
	asJSON := fs.Bool("json", false, "print the attempts as JSON")
	asCSV := fs.Bool("csv", false, "print the --format columns as CSV, with a header line")
	format := fs.String("format", defaultAcctFormat, "the columns, comma-separated, sacct-style (all: every one; see docs/operations.md)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if code := loadCredential(*cred, "acct", stderr); code != exitOK {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "agora acct: unexpected argument %q\n", pos[0])
		return exitBadUsage
	}
	if *asJSON && *asCSV {
		fmt.Fprintln(stderr, "agora acct: --json and --csv: choose one")
		return exitBadUsage
	}
	cols, err := parseAcctFormat(*format)
	if err != nil {
		fmt.Fprintf(stderr, "agora acct: %v\n", err)
		return exitBadUsage
	}
	q, err := filters.query(time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "agora acct: %v\n", err)
		return exitBadUsage
	}
	var ans api.AcctAnswer
	if code := getAcct("acct", *apiAddr, "/v1/acct"+q, &ans, stderr); code != exitOK {
		return code
	}
	for _, p := range ans.Unreachable {
		fmt.Fprintf(stderr, "agora acct: peer %s did not answer: records only it keeps are not listed\n", p)
	}
	if ans.Attempts == nil {
		ans.Attempts = []acct.Attempt{}
	}
	switch {
	case *asJSON:
		b, _ := json.MarshalIndent(ans.Attempts, "", "  ")
		fmt.Fprintln(stdout, string(b))
	case *asCSV:
		w := csv.NewWriter(stdout)
		head := make([]string, len(cols))
		for i, c := range cols {
			head[i] = c.name
		}
		_ = w.Write(head)
		for i := range ans.Attempts {
			row := make([]string, len(cols))
			for j, c := range cols {
				row[j] = c.get(&ans.Attempts[i])
			}
			_ = w.Write(row)
		}
		w.Flush()
	default:
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		for i, c := range cols {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, strings.ToUpper(c.name))
		}
		fmt.Fprintln(tw)
		for i := range ans.Attempts {
			for j, c := range cols {
				if j > 0 {
					fmt.Fprint(tw, "\t")
				}
				v := c.get(&ans.Attempts[i])
				if c.name == "Node" || c.name == "Manager" {
					v = shortID(v)
				}
				fmt.Fprint(tw, dash(strings.ReplaceAll(v, "\n", " ")))
			}
			fmt.Fprintln(tw)
		}
		_ = tw.Flush()
	}
	return exitOK
}

func cmdReport(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report", stdout, stderr)
	apiAddr := apiFlag(fs)
	cred := credentialFlag(fs)
	filters := addAcctFilterFlags(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if code := loadCredential(*cred, "report", stderr); code != exitOK {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "agora report: unexpected argument %q\n", pos[0])
		return exitBadUsage
	}
	q, err := filters.query(time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "agora report: %v\n", err)
		return exitBadUsage
	}
	var rep api.ReportAnswer
	if code := getAcct("report", *apiAddr, "/v1/report"+q, &rep, stderr); code != exitOK {
		return code
	}
	for _, p := range rep.Unreachable {
		fmt.Fprintf(stderr, "agora report: peer %s did not answer: records only it keeps are not counted\n", p)
	}
	if *asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	fmt.Fprintf(stdout, "period       %s .. %s (%s)\n", dash(stamp(rep.Since)), dash(stamp(rep.Until)), rep.Until.Sub(rep.Since).Round(time.Millisecond))
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	table := func(title string, us []acct.Usage) {
		fmt.Fprintf(tw, "%s\tJOBS\tATTEMPTS\tFAILED\tCPU-H\tALLOC-CPU-H\tGPU-H\tMEAN-WAIT\tMEAN-TURNAROUND\n", title)
		for _, u := range us {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.4f\t%.4f\t%.4f\t%s\t%s\n", u.Name, u.Jobs, u.Attempts, u.Failed,
				u.CPUHours, u.AllocCPUHours, u.GPUHours, dash(secs(u.MeanWait)), dash(secs(u.MeanTurnaround)))
		}
	}
	table("USER", rep.Users)
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t")
	table("SITE", rep.Sites)
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t")
	table("TOTAL", []acct.Usage{rep.Total})
	_ = tw.Flush()
	fmt.Fprintf(stdout, "throughput   %.2f jobs/h\n", rep.Throughput)
	if rep.Utilization >= 0 {
		fmt.Fprintf(stdout, "utilization  %.3f of the CPUs of the nodes seen now\n", rep.Utilization)
	}
	fmt.Fprintf(stdout, "jain         %.3f over the users' allocated CPU- and GPU-hours per share\n", rep.Jain)
	return exitOK
}
