package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agora-sched/agora/market"
)

func init() {
	register("jobs", "list the jobs this node manages, or with --all every job in the network", cmdJobs)
	register("status", "show a job and its tasks", cmdStatus)
	register("cancel", "cancel a job", cmdCancel)
}

func cmdJobs(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("jobs", stdout, stderr)
	api := apiFlag(fs)
	cred := credentialFlag(fs)
	asJSON := fs.Bool("json", false, "print the node's JSON (with --all: the rows, docs/operations.md)")
	all := fs.Bool("all", false, "list every job in the network the caller may see, asking every live peer")
	var o queueOpts
	fs.StringVar(&o.state, "state", "", "with --all: only jobs in these states (comma-separated: pending,running,succeeded,failed,cancelled)")
	fs.StringVar(&o.user, "user", "", "with --all: only this user's jobs")
	fs.StringVar(&o.node, "node", "", "with --all: only jobs running (or that ran) on this node (its peer ID or the end of it)")
	fs.StringVar(&o.format, "format", defaultQueueFormat, "with --all: the columns, by name (id,name,owner,state,st,tasks,nodes,manager,submitted,started,priority,fairshare,reason) or squeue-style (%i %j %u %T %t %D %N %M %V %S %Q %F %r)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if code := loadCredential(*cred, "jobs", stderr); code != exitOK {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "agora jobs: unexpected argument %q\n", pos[0])
		return exitBadUsage
	}
	if !*all {
		for _, f := range []string{"state", "user", "node", "format"} {
			if flagWasSet(fs, f) {
				fmt.Fprintf(stderr, "agora jobs: --%s needs --all\n", f)
				return exitBadUsage
			}
		}
	} else {
		o.asJSON = *asJSON
		return listCluster(*api, o, stdout, stderr)
	}
	var raw json.RawMessage
	if err := newClient(*api).do("GET", "/v1/jobs", nil, &raw); err != nil {
		fmt.Fprintf(stderr, "agora jobs: %v\n", err)
		return exitFailed
	}
	var jobs []jobStatus
	if err := json.Unmarshal(raw, &jobs); err != nil {
		fmt.Fprintf(stderr, "agora jobs: bad answer from node: %v\n", err)
		return exitFailed
	}
	if *asJSON {
		if jobs == nil {
			raw = json.RawMessage("[]") // a node with no jobs may answer null
		}
		if err := printIndented(stdout, raw); err != nil {
			fmt.Fprintf(stderr, "agora jobs: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	// Oldest first, like a log; a time that does not parse sorts as zero.
	sort.SliceStable(jobs, func(i, j int) bool {
		return parseTime(jobs[i].Submitted).Before(parseTime(jobs[j].Submitted))
	})
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATE\tTASKS\tSUBMITTED")
	for _, j := range jobs {
		done := 0
		for _, t := range j.Tasks {
			if t.State == "succeeded" {
				done++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d done\t%s\n", j.ID, dash(j.Name), j.State, done, len(j.Tasks), ago(j.Submitted, now))
	}
	_ = tw.Flush()
	return exitOK
}

// parseTime reads an RFC 3339 time from the node, or the zero time.
func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func cmdStatus(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("status", stdout, stderr)
	api := apiFlag(fs)
	cred := credentialFlag(fs)
	asJSON := fs.Bool("json", false, "print the node's JSON")
	specOnly := fs.Bool("spec", false, "print the job's spec (JSON) instead")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if code := loadCredential(*cred, "status", stderr); code != exitOK {
		return code
	}
	id, ok := onlyArg("status", "JOB", pos, stderr)
	if !ok {
		return exitBadUsage
	}
	suffix := ""
	if *specOnly {
		suffix = "/spec"
	}
	var raw json.RawMessage
	if err := newClient(*api).do("GET", jobPath(id, suffix), nil, &raw); err != nil {
		if isStatus(err, http.StatusNotFound) {
			fmt.Fprintf(stderr, "agora status: no job %s\n", id)
		} else {
			fmt.Fprintf(stderr, "agora status: %v\n", err)
		}
		return exitFailed
	}
	if *asJSON || *specOnly {
		if err := printIndented(stdout, raw); err != nil {
			fmt.Fprintf(stderr, "agora status: bad answer from node: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	var st jobStatus
	if err := json.Unmarshal(raw, &st); err != nil {
		fmt.Fprintf(stderr, "agora status: bad answer from node: %v\n", err)
		return exitFailed
	}
	printStatus(stdout, &st)
	return exitOK
}

// stateCounts is "1000: 50 running, 900 pending, 50 succeeded", states in
// their lifecycle order.
func stateCounts(c map[string]int) string {
	total := 0
	var parts []string
	for _, s := range []market.TaskState{market.TaskRunning, market.TaskAwarded, market.TaskPending, market.TaskWaiting, market.TaskSucceeded, market.TaskFailed, market.TaskCancelled} {
		if n := c[string(s)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	for _, n := range c {
		total += n
	}
	return fmt.Sprintf("%d: %s", total, strings.Join(parts, ", "))
}

// printStatus writes a job's header lines and its table of task replicas.
func printStatus(w io.Writer, st *jobStatus) {
	tw := tabwriter.NewWriter(w, 2, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\n", st.ID)
	fmt.Fprintf(tw, "name:\t%s\n", st.Name)
	fmt.Fprintf(tw, "state:\t%s\n", st.State)
	if st.Owner != "" {
		fmt.Fprintf(tw, "owner:\t%s\n", st.Owner)
	}
	if f := st.Factors; f != nil {
		fmt.Fprintf(tw, "factors:\tpriority %d, fair share %.3f (usage %.0f core-seconds, decayed)\n", f.Priority, f.FairShare, f.Usage)
	}
	if st.Reason != "" {
		fmt.Fprintf(tw, "reason:\t%s\n", flatten(st.Reason))
	}
	if st.Manager != "" {
		fmt.Fprintf(tw, "manager:\t%s\n", st.Manager)
	}
	if st.Submitted != "" {
		fmt.Fprintf(tw, "submitted:\t%s\n", st.Submitted)
	}
	if st.Finished != "" {
		fmt.Fprintf(tw, "finished:\t%s\n", st.Finished)
	}
	for _, name := range slices.Sorted(maps.Keys(st.Counts)) {
		fmt.Fprintf(tw, "replicas:\t%s: %s\n", name, stateCounts(st.Counts[name]))
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	// REASON is often empty: trim the padding tabwriter leaves before it.
	var table strings.Builder
	tw = tabwriter.NewWriter(&table, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATE\tNODE\tATTEMPTS\tEXIT\tREASON")
	for _, t := range st.Tasks {
		exit := "-"
		if t.State == "succeeded" || t.State == "failed" {
			exit = fmt.Sprint(t.ExitCode)
		}
		reason := t.Reason
		if t.Waiting != "" {
			reason = t.Waiting
		}
		attempts := fmt.Sprint(t.Attempts)
		if t.Preempted > 0 {
			attempts += fmt.Sprintf(" (%d preempted)", t.Preempted)
			if reason == "" && len(t.History) > 0 {
				// Why it moved, while nothing else says why it waits.
				if h := t.History[len(t.History)-1]; h.State == "preempted" {
					reason = "preempted on " + h.Node + ": " + h.Reason
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", replicaLabel(t.Name, t.Replica), t.State, dash(t.Node), attempts, exit, flatten(reason))
	}
	_ = tw.Flush()
	for _, l := range strings.SplitAfter(table.String(), "\n") {
		if l != "" {
			fmt.Fprintln(w, strings.TrimRight(l, " \n"))
		}
	}
}

func cmdCancel(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("cancel", stdout, stderr)
	api := apiFlag(fs)
	cred := credentialFlag(fs)
	asJSON := fs.Bool("json", false, "print the node's JSON answer")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if code := loadCredential(*cred, "cancel", stderr); code != exitOK {
		return code
	}
	id, ok := onlyArg("cancel", "JOB", pos, stderr)
	if !ok {
		return exitBadUsage
	}
	var raw json.RawMessage
	if err := newClient(*api).do("DELETE", jobPath(id, ""), nil, &raw); err != nil {
		if isStatus(err, http.StatusNotFound) {
			fmt.Fprintf(stderr, "agora cancel: no job %s\n", id)
		} else {
			fmt.Fprintf(stderr, "agora cancel: %s\n", flatten(err.Error()))
		}
		return exitFailed
	}
	if *asJSON {
		if err := printIndented(stdout, raw); err != nil {
			fmt.Fprintf(stderr, "agora cancel: bad answer from node: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "cancelled %s\n", id)
	return exitOK
}
