package market_test

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/cluster"
	"github.com/agora-sched/agora/market/spec"
)

// TestScripts runs the protocol scenarios in testdata/*.txt: a cluster of
// real markets driven by market/cluster in virtual time, with what each
// node does printed after every command. `go test ./market -run
// TestScripts -rewrite` rewrites the expected output after a deliberate
// change; read the diff before committing it.
//
// Commands (node names are n1, n2, ...):
//
//	cluster [market-config=value ...]   one line per node in the input:
//	    NAME cpu=N [gpus=N] [site=S] [label=k=v] [absent]   (absent: joins later)
//	    config: bid-window, lease-every, lease-timeout, adopt-grace,
//	    replicate-every, retry-base, steal-every, scheduling-timeout,
//	    hold-expiry, gang-reserve-after, advert-interval, no-steal
//	submit NODE JOB                     the input is the job spec (YAML)
//	behave JOB/TASK[/REPLICA] runtime=D [exit=E,E,...]   how its attempts run and exit
//	run D                               advance virtual time by D
//	crash NODE | gone NODE | restart NODE | join NODE | leave NODE
//	partition NODE NODE | heal NODE NODE   (messages cut; a restarted node
//	    does not hear a cut peer's advert; heal brings both adverts across)
//	drop FROM TO KIND                   lose the next KIND message FROM sends TO
//	cancel NODE JOB | drain NODE
//	status NODE JOB                     the job's record on NODE, compactly
//
// What a node did prints as "TIME NODE: what": its market's event lines,
// task processes starting, being stopped and exiting, job-record copies
// going out, copies dropped, records forgotten, and, when the command
// has the argument msgs, the messages it sent but lease renewals.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &script{t: t}
		datadriven.RunTest(t, path, s.run)
		if s.cl != nil {
			for _, v := range s.cl.Violations() {
				t.Errorf("broken invariant: %s", v)
			}
		}
	})
}

// script is one scenario's state.
type script struct {
	t      *testing.T
	cl     *cluster.Cluster
	q      *cluster.Queue
	names  []string
	out    []string
	msgs   bool
	behave map[string]behaviour // by "job/task"
	net    *scriptNet
	last   map[string]market.TaskState // last status sent per "from key epoch", to spot renewals
}

type behaviour struct {
	runtime time.Duration
	exits   []int
}

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (s *script) run(t *testing.T, d *datadriven.TestData) string {
	s.out = s.out[:0]
	s.msgs = d.HasArg("msgs")
	switch d.Cmd {
	case "cluster":
		s.newCluster(t, d)
	case "submit":
		js, err := spec.Parse([]byte(d.Input), s.cl.Time())
		if err != nil {
			d.Fatalf(t, "spec: %v", err)
		}
		if err := s.cl.Submit(s.node(t, d, 0), s.arg(t, d, 1), *js); err != nil {
			s.out = append(s.out, "error: "+err.Error())
		}
	case "behave":
		var b behaviour
		for _, a := range d.CmdArgs[1:] {
			switch a.Key {
			case "runtime":
				b.runtime = s.duration(t, d, a.Vals[0])
			case "exit":
				for _, v := range strings.Split(strings.Join(a.Vals, ","), ",") {
					e, err := strconv.Atoi(v)
					if err != nil {
						d.Fatalf(t, "exit %q: %v", v, err)
					}
					b.exits = append(b.exits, e)
				}
			}
		}
		s.behave[s.arg(t, d, 0)] = b
	case "run":
		s.q.RunUntil(s.cl, s.cl.Now()+s.duration(t, d, s.arg(t, d, 0)))
	case "crash":
		s.cl.Crash(s.node(t, d, 0))
	case "gone":
		s.cl.Gone(s.node(t, d, 0))
	case "restart":
		if err := s.cl.Restart(s.node(t, d, 0)); err != nil {
			d.Fatalf(t, "%v", err)
		}
	case "leave":
		s.cl.Leave(s.node(t, d, 0))
	case "join":
		s.cl.Join(s.node(t, d, 0))
	case "partition", "heal":
		a, b := s.node(t, d, 0), s.node(t, d, 1)
		s.net.cut[[2]int{a, b}], s.net.cut[[2]int{b, a}] = d.Cmd == "partition", d.Cmd == "partition"
		if d.Cmd == "heal" {
			s.cl.Hear(a, b)
			s.cl.Hear(b, a)
		}
	case "drop":
		s.net.drops = append(s.net.drops, drop{from: s.node(t, d, 0), to: s.node(t, d, 1), kind: s.arg(t, d, 2)})
	case "cancel":
		job := s.arg(t, d, 1)
		s.cl.Do(s.node(t, d, 0), func(m *market.Market, now time.Time) {
			if err := m.Cancel(now, job, "cancelled by user"); err != nil {
				s.out = append(s.out, "error: "+err.Error())
			}
		})
	case "drain":
		s.cl.Do(s.node(t, d, 0), func(m *market.Market, now time.Time) { m.Drain(now) })
	case "status":
		return s.status(t, d)
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	if len(s.out) == 0 {
		return "ok\n"
	}
	return strings.Join(s.out, "\n") + "\n"
}

// newCluster builds the cluster of the input's nodes.
func (s *script) newCluster(t *testing.T, d *datadriven.TestData) {
	base := market.Config{LeaseEvery: time.Second, LeaseTimeout: 5 * time.Second}
	for _, a := range d.CmdArgs {
		if a.Key == "no-steal" {
			base.NoSteal = true
			continue
		}
		dur := durations(&base)[a.Key]
		if dur == nil {
			d.Fatalf(t, "unknown cluster setting %q", a.Key)
		}
		*dur = s.duration(t, d, a.Vals[0])
	}
	var mcs []market.Config
	var absent []int
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		mc := base
		mc.Self, mc.Seed = market.NodeID(f[0]), int64(len(mcs)+1)
		mc.Capacity = resource.Vector{Memory: 64 << 30, Disk: 1 << 40}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "cpu":
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					d.Fatalf(t, "%s: cpu %q", f[0], v)
				}
				mc.Capacity.CPU = int64(n * 1000)
			case "gpus":
				n, _ := strconv.Atoi(v)
				for i := range n {
					mc.Capacity.GPUs = append(mc.Capacity.GPUs, resource.GPU{Index: i, Model: "A100", Memory: 40 << 30, Free: resource.WholeGPU})
				}
			case "absent":
				absent = append(absent, len(mcs))
			case "site":
				mc.Site = v
			case "label":
				lk, lv, _ := strings.Cut(v, "=")
				if mc.Labels == nil {
					mc.Labels = map[string]string{}
				}
				mc.Labels[lk] = lv
			default:
				d.Fatalf(t, "%s: unknown node setting %q", f[0], k)
			}
		}
		mcs = append(mcs, mc)
		s.names = append(s.names, f[0])
	}
	s.q = cluster.NewQueue()
	s.net = &scriptNet{cut: map[[2]int]bool{}}
	s.behave = map[string]behaviour{}
	s.last = map[string]market.TaskState{}
	cl, err := cluster.New(cluster.Config{Markets: mcs, Start: start, AdvertEvery: base.AdvertInterval,
		Runtime: s.runtime, Clock: s.q, Network: s.net, Observer: s, Faults: true, TickEvery: 10 * time.Millisecond}, absent...)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	s.cl = cl
	s.net.names = s.names
	cl.Start()
}

// durations names the market settings a script may set.
func durations(c *market.Config) map[string]*time.Duration {
	return map[string]*time.Duration{
		"bid-window": &c.BidWindow, "lease-every": &c.LeaseEvery, "lease-timeout": &c.LeaseTimeout,
		"adopt-grace": &c.AdoptGrace, "replicate-every": &c.ReplicateEvery, "retry-base": &c.RetryBase,
		"steal-every": &c.StealEvery, "scheduling-timeout": &c.SchedulingTimeout, "hold-expiry": &c.HoldExpiry,
		"gang-reserve-after": &c.GangReserveAfter, "advert-interval": &c.AdvertInterval,
	}
}

// runtime says how a task attempt runs, from behave (1s, exit 0 else),
// for the replica or else for every replica of the task.
func (s *script) runtime(_ int, t market.TaskSpec) (time.Duration, int) {
	b, ok := s.behave[t.Key.String()]
	if !ok {
		b, ok = s.behave[t.Key.Job+"/"+t.Key.Task]
	}
	if !ok {
		return time.Second, 0
	}
	exit := 0
	if len(b.exits) > 0 {
		exit = b.exits[min(t.Attempt, len(b.exits))-1]
	}
	return b.runtime, exit
}

func (s *script) arg(t *testing.T, d *datadriven.TestData, i int) string {
	if i >= len(d.CmdArgs) {
		d.Fatalf(t, "%s: argument %d missing", d.Cmd, i+1)
	}
	return d.CmdArgs[i].Key
}

func (s *script) node(t *testing.T, d *datadriven.TestData, i int) int {
	name := s.arg(t, d, i)
	n := slices.Index(s.names, name)
	if n < 0 {
		d.Fatalf(t, "no node %q", name)
	}
	return n
}

func (s *script) duration(t *testing.T, d *datadriven.TestData, v string) time.Duration {
	dur, err := time.ParseDuration(v)
	if err != nil {
		d.Fatalf(t, "duration %q: %v", v, err)
	}
	return dur
}

// at prefixes a line with the virtual time and a node's name.
func (s *script) at(node int, format string, args ...any) {
	s.out = append(s.out, fmt.Sprintf("%s %s: ", fmtTime(s.cl.Now()), s.names[node])+fmt.Sprintf(format, args...))
}

func fmtTime(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + "s"
}

// Effects implements cluster.Observer.
func (s *script) Effects(i int, effs []market.Effect) {
	for _, e := range effs {
		switch x := e.(type) {
		case market.Event:
			s.at(i, "%s", x.Text)
		case market.StartTask:
			s.at(i, "start %s epoch %d attempt %d", x.Task.Key, x.Task.Epoch, x.Task.Attempt)
		case market.StopTask:
			s.at(i, "stop %s epoch %d: %s", x.Key, x.Epoch, x.Reason)
		case market.Replicate:
			var parts []string
			for _, c := range x.Records {
				p := fmt.Sprintf("%s(%s) to %s", c.Record.ID, c.Record.State, names(c.Peers))
				if len(c.Drop) > 0 {
					p += ", drop at " + names(c.Drop)
				}
				parts = append(parts, p)
			}
			s.at(i, "copy %s", strings.Join(parts, "; "))
		case market.DropReplica:
			s.at(i, "drop copy of %s", x.Job)
		case market.ForgetJob:
			s.at(i, "forget %s", x.Job)
		case market.Send:
			if s.msgs && !s.renewal(i, x) {
				s.at(i, "→ %s %s", x.To, describe(x.Msg))
			}
		case market.Broadcast:
			if s.msgs {
				s.at(i, "→ all %s", describe(x.Msg))
			}
		}
	}
}

// renewal reports whether a message is a lease renewal: a task status an
// executor already sent for the same replica, epoch and state.
func (s *script) renewal(i int, x market.Send) bool {
	st, ok := x.Msg.(market.TaskStatus)
	if !ok {
		return false
	}
	k := fmt.Sprintf("%d %s %d", i, st.Key, st.Epoch)
	if s.last[k] == st.State && (st.State == market.TaskRunning || st.State == market.TaskAwarded) {
		return true
	}
	s.last[k] = st.State
	return false
}

func names(ids []market.NodeID) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return strings.Join(out, ",")
}

// describe renders a message in a line.
func describe(m market.Msg) string {
	switch x := m.(type) {
	case market.CFP:
		return "cfp " + x.Auction.String()
	case market.Bid:
		return fmt.Sprintf("bid %s score %.3f", x.Auction, x.Score)
	case market.NoBid:
		return fmt.Sprintf("nobid %s: %s", x.Auction, x.Reason)
	case market.Award:
		return "award " + x.Auction.String()
	case market.AwardReply:
		if x.Accept {
			return "accept " + x.Auction.String()
		}
		return fmt.Sprintf("decline %s: %s", x.Auction, x.Reason)
	case market.TaskStatus:
		return fmt.Sprintf("status %s epoch %d %s", x.Key, x.Epoch, x.State)
	case market.CancelTask:
		return fmt.Sprintf("cancel %s epoch %d: %s", x.Key, x.Epoch, x.Reason)
	case market.Hold:
		return fmt.Sprintf("hold %s epoch %d", x.Task.Key, x.Auction.Epoch)
	case market.HoldReply:
		if x.OK {
			return fmt.Sprintf("held %s/%d", x.Auction.Key.Task, x.Replica)
		}
		return fmt.Sprintf("refuse hold %s/%d: %s", x.Auction.Key.Task, x.Replica, x.Reason)
	case market.Commit:
		return fmt.Sprintf("commit %s epoch %d rank %d", x.Key, x.Epoch, x.Rank)
	case market.Release:
		return fmt.Sprintf("release %s epoch %d", x.Key, x.Epoch)
	case market.StealRequest:
		return fmt.Sprintf("steal up to %d", x.Max)
	case market.Transfer:
		return fmt.Sprintf("transfer %s epoch %d from %s to %s", x.Key, x.Epoch, x.From, x.To)
	case market.ManagerQuery:
		return "who manages " + x.Job
	case market.ManagerAnswer:
		if x.Manages {
			return "I manage " + x.Job
		}
		return "not I " + x.Job
	}
	return market.Kind(m)
}

// Started implements cluster.Observer.
func (s *script) Started(int, market.TaskSpec) {}

// Ended implements cluster.Observer.
func (s *script) Ended(i int, k market.TaskKey, r *cluster.Run, exit int, lost bool) {
	switch {
	case lost:
		s.at(i, "process %s epoch %d lost", k, r.Epoch)
	default:
		s.at(i, "process %s epoch %d exited %d", k, r.Epoch, exit)
	}
}

// Saved implements cluster.Observer.
func (s *script) Saved(int, market.JobRecord) {}

// Left implements cluster.Observer.
func (s *script) Left(i int) { s.at(i, "left") }

// status prints a job's record on a node.
func (s *script) status(t *testing.T, d *datadriven.TestData) string {
	n := s.cl.Node(s.node(t, d, 0))
	if n.Market == nil {
		return "node down\n"
	}
	id := s.arg(t, d, 1)
	j, ok := n.Market.Job(id)
	if !ok {
		if n.Market.Holds(id) {
			return "held back after a restart\n"
		}
		return "no such job\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s manager %s%s\n", j.ID, j.State, j.Manager, reason(j.Reason))
	sort.SliceStable(j.Tasks, func(a, b int) bool { return j.Tasks[a].Key.Compare(j.Tasks[b].Key) < 0 })
	for _, tr := range j.Tasks {
		fmt.Fprintf(&b, "  %s/%d %s node %s epoch %d attempts %d failures %d%s\n", tr.Key.Task, tr.Key.Replica, tr.State, or(string(tr.Node), "-"), tr.Epoch, tr.Attempts, tr.Failures, reason(tr.Reason))
		for _, h := range tr.History {
			fmt.Fprintf(&b, "    attempt %d epoch %d on %s: %s%s\n", h.Attempt, h.Epoch, h.Node, h.State, reason(h.Reason))
		}
	}
	return b.String()
}

func reason(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// scriptNet is the scripts' network: 1 ms between any two nodes, but for
// the pairs cut off (partition) and the messages a drop command loses.
type scriptNet struct {
	names []string
	cut   map[[2]int]bool
	drops []drop
}

type drop struct {
	from, to int
	kind     string
}

// Send implements cluster.Network.
func (n *scriptNet) Send(from, to int, msg market.Msg) (time.Duration, bool) {
	if n.cut[[2]int{from, to}] {
		return 0, false
	}
	for i, d := range n.drops {
		if d.from == from && d.to == to && d.kind == market.Kind(msg) {
			n.drops = slices.Delete(n.drops, i, i+1)
			return 0, false
		}
	}
	return time.Millisecond, true
}

// Link implements cluster.Network.
func (n *scriptNet) Link(from, to int) (time.Duration, bool) {
	return time.Millisecond, !n.cut[[2]int{from, to}]
}
