package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agora-sched/agora/node/api"
)

// The cluster-wide queue: agora jobs --all asks one node, which asks
// every live peer (GET /v1/cluster/jobs), and prints one row per job.

// jobRow is a row of the cluster-wide list.
type jobRow = api.JobRow

// queueOpts are agora jobs --all's filters and format.
type queueOpts struct {
	state, user, node, format string
	asJSON                    bool
}

// queueColumns are the columns --format may name, by name and by the
// squeue letter a Slurm user knows (%i, %j, ...), with their headers.
var queueColumns = []struct {
	name, letter, header string
	value                func(r jobRow, now time.Time) string
}{
	{"id", "i", "ID", func(r jobRow, _ time.Time) string { return r.ID }},
	{"name", "j", "NAME", func(r jobRow, _ time.Time) string { return dash(r.Name) }},
	{"owner", "u", "OWNER", func(r jobRow, _ time.Time) string { return dash(r.Owner) }},
	{"state", "T", "STATE", func(r jobRow, _ time.Time) string { return r.State }},
	{"st", "t", "ST", func(r jobRow, _ time.Time) string { return shortState(r.State) }},
	{"tasks", "D", "TASKS", func(r jobRow, _ time.Time) string { return fmt.Sprintf("%d/%d", r.Done, r.Tasks) }},
	{"nodes", "N", "NODES", func(r jobRow, _ time.Time) string { return nodeList(r.Nodes) }},
	{"manager", "M", "MANAGER", func(r jobRow, _ time.Time) string { return shortID(r.Manager) }},
	{"submitted", "V", "SUBMITTED", func(r jobRow, now time.Time) string { return ago(r.Submitted, now) }},
	{"started", "S", "STARTED", func(r jobRow, now time.Time) string { return ago(r.Started, now) }},
	{"priority", "Q", "PRIO", func(r jobRow, _ time.Time) string {
		if r.Factors == nil {
			return "-"
		}
		return strconv.Itoa(r.Factors.Priority)
	}},
	{"fairshare", "F", "FAIRSHARE", func(r jobRow, _ time.Time) string {
		if r.Factors == nil {
			return "-"
		}
		return strconv.FormatFloat(r.Factors.FairShare, 'f', 3, 64)
	}},
	{"reason", "r", "REASON", func(r jobRow, _ time.Time) string {
		if r.Reason == "" {
			return dash(flatten(r.Waiting))
		}
		return flatten(r.Reason)
	}},
}

// defaultQueueFormat is the table agora jobs --all prints.
const defaultQueueFormat = "id,name,owner,state,tasks,nodes,submitted,started,fairshare,reason"

// parseQueueFormat reads --format: column names separated by commas, or
// squeue-style %letters ("%i %j %T %N"). It returns the columns' indexes.
func parseQueueFormat(f string) ([]int, error) {
	var names []string
	if strings.Contains(f, "%") {
		for _, part := range strings.Split(f, "%")[1:] {
			part = strings.TrimSpace(part)
			if part == "" {
				return nil, fmt.Errorf("--format %q: a %% with no letter", f)
			}
			names = append(names, "%"+part[:1])
		}
	} else {
		names = strings.Split(f, ",")
	}
	var out []int
	for _, n := range names {
		n = strings.TrimSpace(n)
		found := -1
		for i, c := range queueColumns {
			if n == c.name || n == "%"+c.letter {
				found = i
			}
		}
		if found < 0 {
			return nil, fmt.Errorf("--format: unknown column %q (want %s, or %%i %%j %%u %%T %%t %%D %%N %%M %%V %%S %%r)", n, columnNames())
		}
		out = append(out, found)
	}
	return out, nil
}

func columnNames() string {
	var s []string
	for _, c := range queueColumns {
		s = append(s, c.name)
	}
	return strings.Join(s, ",")
}

// shortState is a state as squeue's %t writes it.
func shortState(s string) string {
	switch s {
	case "pending":
		return "PD"
	case "running":
		return "R"
	case "succeeded":
		return "CD"
	case "failed":
		return "F"
	case "cancelled":
		return "CA"
	}
	return s
}

// nodeList names the nodes a job runs on, short.
func nodeList(nodes []string) string {
	if len(nodes) == 0 {
		return "-"
	}
	var s []string
	for i, n := range nodes {
		if i == 3 {
			s = append(s, fmt.Sprintf("+%d", len(nodes)-3))
			break
		}
		s = append(s, shortID(n))
	}
	return strings.Join(s, ",")
}

// ago renders an API time relative to now (api.Ago); "-" for none.
func ago(ts string, now time.Time) string { return api.Ago(parseTime(ts), now) }

// listCluster prints the cluster-wide queue.
func listCluster(apiAddr string, o queueOpts, stdout, stderr io.Writer) int {
	cols, err := parseQueueFormat(o.format)
	if err != nil {
		fmt.Fprintf(stderr, "agora jobs: %v\n", err)
		return exitBadUsage
	}
	q := url.Values{}
	for k, v := range map[string]string{"state": o.state, "user": o.user, "node": o.node} {
		if v != "" {
			q.Set(k, v)
		}
	}
	path := "/v1/cluster/jobs"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var all api.ClusterJobs
	if err := newClient(apiAddr).do("GET", path, nil, &all); err != nil {
		fmt.Fprintf(stderr, "agora jobs: %v\n", err)
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == 400 {
			return exitBadUsage
		}
		return exitFailed
	}
	for _, p := range all.Unreachable {
		fmt.Fprintf(stderr, "agora jobs: peer %s did not answer: its jobs are not listed\n", p)
	}
	for _, p := range all.Truncated {
		fmt.Fprintf(stderr, "agora jobs: peer %s has more jobs than one answer holds: its oldest are not listed\n", p)
	}
	if all.Jobs == nil {
		all.Jobs = []jobRow{}
	}
	if o.asJSON {
		b, _ := json.MarshalIndent(all.Jobs, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	var head []string
	for _, c := range cols {
		head = append(head, queueColumns[c].header)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range all.Jobs {
		var cells []string
		for _, c := range cols {
			cells = append(cells, queueColumns[c].value(r, now))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
	return exitOK
}
