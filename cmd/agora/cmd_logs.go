package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agora-sched/agora/node/api"
)

func init() {
	register("logs", "print a job's task output", cmdLogs)
}

// logsAnswer is the node's answer to GET /v1/jobs/{id}/logs.
type logsAnswer = api.LogsResponse

// logEntry is the output of one task replica's latest attempt, from the
// requested chunk on; Next is the cursor for the following request.
type logEntry = api.LogEntry

// entryKey names a log entry's task replica.
func entryKey(e logEntry) string { return replicaLabel(e.Task, e.Replica) }

// logsQuery is the path of a logs request. from is sent when non-zero,
// which the API allows only with both task and replica.
func logsQuery(id, task string, replica int, withReplica bool, from uint64) string {
	q := url.Values{}
	if task != "" {
		q.Set("task", task)
	}
	if withReplica {
		q.Set("replica", strconv.Itoa(replica))
	}
	if from > 0 {
		q.Set("from", strconv.FormatUint(from, 10))
	}
	p := jobPath(id, "/logs")
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return p
}

func cmdLogs(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("logs", stdout, stderr)
	api := apiFlag(fs)
	cred := credentialFlag(fs)
	task := fs.String("task", "", "show only this task")
	replica := fs.Int("replica", 0, "show only this replica")
	follow := fs.Bool("follow", false, "keep printing new output until the job ends")
	asJSON := fs.Bool("json", false, "print one JSON object per piece of output (task, replica, attempt, node, stream, data), one per line")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if code := loadCredential(*cred, "logs", stderr); code != exitOK {
		return code
	}
	id, ok := onlyArg("logs", "JOB", pos, stderr)
	if !ok {
		return exitBadUsage
	}
	f := &logFollower{
		id:          id,
		c:           newPollClient(*api),
		out:         &logPrinter{w: stdout, jsonLines: *asJSON},
		task:        *task,
		replica:     *replica,
		withReplica: flagWasSet(fs, "replica"),
	}
	if f.withReplica && f.replica < 0 {
		fmt.Fprintf(stderr, "agora logs: --replica %d is negative\n", f.replica)
		return exitBadUsage
	}
	var a logsAnswer
	if err := f.c.do("GET", logsQuery(id, f.task, f.replica, f.withReplica, 0), nil, &a); err != nil {
		return logsError(stderr, err)
	}
	if err := f.start(&a); err != nil {
		return logsError(stderr, err)
	}
	if !*follow {
		return exitOK
	}
	if err := f.follow(); err != nil {
		return logsError(stderr, err)
	}
	return exitOK
}

func logsError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "agora logs: %s\n", flatten(err.Error()))
	return exitFailed
}

// drainThreshold is the reply size from which a replica's output may have
// been cut short by the node's per-reply limit (1 MiB in node/query.go):
// a reply this large is followed at once by another from its cursor.
const drainThreshold = 64 << 10

// logFollower prints a job's logs and, with follow, polls each shown task
// replica for more.
type logFollower struct {
	id          string
	c           *client
	out         *logPrinter
	task        string // --task, or "" for all
	replica     int    // --replica, when withReplica
	withReplica bool
	cursors     []logEntry // per shown replica: its attempt and Next cursor
	complete    bool       // every replica the filters select has a cursor
	state       string     // the job state last reported
}

// start prints the first answer, reading on where a replica's output was
// cut short, and records where each replica's output continues.
func (f *logFollower) start(a *logsAnswer) error {
	f.state = a.State
	f.out.headers = len(a.Logs) > 1
	for _, e := range a.Logs {
		if f.out.headers {
			f.out.header(e)
		}
		f.out.data(e)
		long := len(e.Data) >= drainThreshold
		e.Data = ""
		f.cursors = append(f.cursors, e)
		if long {
			if _, err := f.poll(&f.cursors[len(f.cursors)-1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// follow polls until the job has ended and a round of polls after that
// brought no new output. Replicas that start later are found through the
// job's status.
func (f *logFollower) follow() error {
	var r retrier
	ended := terminal(f.state)
	for {
		time.Sleep(followInterval)
		fresh := false
		if !f.complete {
			if err := f.discover(); err != nil {
				if r.giveUp(err) {
					return err
				}
				continue
			}
		}
		for i := range f.cursors {
			got, err := f.poll(&f.cursors[i])
			if err != nil {
				if r.giveUp(err) {
					return err
				}
				fresh = true // not a clean round: do not stop on it
				continue
			}
			r.reset()
			fresh = fresh || got
		}
		if ended && !fresh {
			return nil
		}
		ended = terminal(f.state)
	}
}

// discover adds a cursor for every replica the filters select that has
// started since, as the job's status tells.
func (f *logFollower) discover() error {
	var st jobStatus
	if err := f.c.do("GET", jobPath(f.id, ""), nil, &st); err != nil {
		return err
	}
	f.state = st.State
	have := map[string]bool{}
	for _, c := range f.cursors {
		have[entryKey(c)] = true
	}
	f.complete = true
	for _, t := range st.Tasks {
		if (f.task != "" && t.Name != f.task) || (f.withReplica && t.Replica != f.replica) {
			continue
		}
		k := replicaLabel(t.Name, t.Replica)
		switch {
		case have[k]:
		case t.Attempts > 0 || t.Node != "":
			f.cursors = append(f.cursors, logEntry{Task: t.Name, Replica: t.Replica, Next: 1})
			have[k] = true
		default:
			f.complete = false
		}
	}
	f.out.headers = f.out.headers || len(f.cursors) > 1
	return nil
}

// poll fetches and prints one replica's new output, reporting whether
// there was any. A new attempt's output is read from its start, and a
// reply large enough to have been cut short is followed by another.
func (f *logFollower) poll(cur *logEntry) (bool, error) {
	from := max(cur.Next, 1)
	got := false
	for {
		var a logsAnswer
		if err := f.c.do("GET", logsQuery(f.id, cur.Task, cur.Replica, true, from), nil, &a); err != nil {
			return got, err
		}
		f.state = a.State
		e, ok := findEntry(a.Logs, cur.Task, cur.Replica)
		if !ok {
			return got, nil
		}
		if e.Attempt != cur.Attempt && from != 1 {
			from = 1 // the cursor belonged to the previous attempt
			continue
		}
		newAttempt := e.Attempt != cur.Attempt && cur.Attempt != 0
		cur.Attempt, cur.Node = e.Attempt, e.Node
		if e.Next > 0 {
			cur.Next = e.Next
		}
		if newAttempt {
			f.out.header(e)
		}
		f.out.data(e)
		got = got || e.Data != "" || newAttempt
		if len(e.Data) < drainThreshold || cur.Next <= from {
			return got, nil
		}
		from = cur.Next
	}
}

// findEntry picks a replica's entry from an answer.
func findEntry(logs []logEntry, task string, replica int) (logEntry, bool) {
	for _, e := range logs {
		if e.Task == task && e.Replica == replica {
			return e, true
		}
	}
	if len(logs) == 1 {
		return logs[0], true
	}
	return logEntry{}, false
}

// logPrinter writes task output, with a header naming the task replica
// whenever several are shown and the output switches between them.
type logPrinter struct {
	w io.Writer
	// errW, when set, takes what the task wrote to its standard error
	// (and the headers), w the rest; otherwise w takes everything.
	errW io.Writer
	// jsonLines prints each piece of output as a JSON object on a line
	// of its own (logLine), for scripts, instead of the output itself.
	jsonLines bool
	headers   bool   // several task replicas are shown
	last      string // key of the replica printed last
	started   bool   // something was printed
	midLine   bool   // the last output did not end in a newline
}

// header prints ==> task[replica] (attempt N on NODE) <==.
func (p *logPrinter) header(e logEntry) {
	if p.jsonLines {
		return // each line names its replica
	}
	hw := p.w
	if p.errW != nil {
		hw = p.errW // the output stays the task's own
	}
	if p.midLine && p.errW == nil {
		fmt.Fprintln(p.w)
		p.midLine = false
	}
	if p.started && p.errW == nil {
		fmt.Fprintln(p.w)
	}
	where := "not started"
	switch {
	case e.Attempt > 0 && e.Node != "":
		where = fmt.Sprintf("attempt %d on %s", e.Attempt, e.Node)
	case e.Attempt > 0:
		where = fmt.Sprintf("attempt %d", e.Attempt)
	}
	fmt.Fprintf(hw, "==> %s (%s) <==\n", entryKey(e), where)
	p.last, p.started = entryKey(e), true
}

// data prints a replica's new output, after a header if another
// replica's output came last.
func (p *logPrinter) data(e logEntry) {
	if e.Data == "" {
		return
	}
	if p.jsonLines {
		p.writeJSON(e)
		return
	}
	if p.headers && p.last != entryKey(e) {
		p.header(e)
	}
	p.write(e)
	p.last, p.started = entryKey(e), true
	p.midLine = !strings.HasSuffix(e.Data, "\n")
}

// logLine is one piece of a replica's output in logs --json: what the
// task wrote to one stream, as the node kept it.
type logLine struct {
	Task    string `json:"task"`
	Replica int    `json:"replica"`
	Attempt int    `json:"attempt"`
	Node    string `json:"node"`
	Stream  string `json:"stream"` // stdout or stderr
	Data    string `json:"data"`
}

// writeJSON prints a replica's new output as logLines, split along its
// stderr spans.
func (p *logPrinter) writeJSON(e logEntry) {
	enc := json.NewEncoder(p.w)
	line := func(stream, data string) {
		if data != "" {
			_ = enc.Encode(logLine{Task: e.Task, Replica: e.Replica, Attempt: e.Attempt, Node: e.Node, Stream: stream, Data: data})
		}
	}
	at := 0
	for _, sp := range e.Stderr {
		if sp.Off < at || sp.Len < 0 || sp.Off+sp.Len > len(e.Data) {
			break
		}
		line("stdout", e.Data[at:sp.Off])
		line("stderr", e.Data[sp.Off:sp.Off+sp.Len])
		at = sp.Off + sp.Len
	}
	line("stdout", e.Data[at:])
}

// write prints a replica's output: to w, or split between w and errW
// along its stderr spans.
func (p *logPrinter) write(e logEntry) {
	if p.errW == nil || len(e.Stderr) == 0 {
		_, _ = io.WriteString(p.w, e.Data)
		return
	}
	at := 0
	for _, sp := range e.Stderr {
		if sp.Off < at || sp.Len < 0 || sp.Off+sp.Len > len(e.Data) {
			break // a span past the data: the rest goes out as output
		}
		_, _ = io.WriteString(p.w, e.Data[at:sp.Off])
		_, _ = io.WriteString(p.errW, e.Data[sp.Off:sp.Off+sp.Len])
		at = sp.Off + sp.Len
	}
	_, _ = io.WriteString(p.w, e.Data[at:])
}
