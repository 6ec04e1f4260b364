package market

import (
	"fmt"
	"iter"
	"sort"
	"time"

	"github.com/agora-sched/agora/market/spec"
)

// Submit accepts a validated job under the given ID and starts placing its
// ready tasks. The job spec must have passed spec validation.
func (m *Market) Submit(now time.Time, id string, js spec.Job) error {
	return m.SubmitAs(now, id, js, "")
}

// SubmitAs is Submit of a job that names its owner, in a network
// without an authority, where nothing proves who submitted it: the
// simulator's jobs, which carry their trace's users so that the fair
// share charges them (fairshare.go).
func (m *Market) SubmitAs(now time.Time, id string, js spec.Job, owner string) error {
	m.enter(now)
	defer m.leave()
	if m.tix.trusted() {
		return errUnsigned
	}
	if _, dup := m.jobs[id]; dup {
		return fmt.Errorf("market: job %s already exists", id)
	}
	if err := js.Validate(); err != nil {
		return err
	}
	if err := js.Pinned(); err != nil {
		return err
	}
	m.mgr.submit(id, js, owner, nil)
	return nil
}

// submit starts managing a new job, of owner and its ticket in a
// network with an authority.
func (mg *manager) submit(id string, js spec.Job, owner string, ticket []byte) {
	j := newJobRecord(id, js, mg.cfg.Self, mg.now)
	j.Owner, j.Ticket = owner, ticket
	mg.jobs[id] = &j
	mg.jobOrder = append(mg.jobOrder, id)
	mg.active = append(mg.active, id)
	mg.dl.activate(id)
	mg.dl.retimeJob(id)
	mg.touch(id)
	mg.rep.urgent = append(mg.rep.urgent, id)
	mg.event(id, fmt.Sprintf("submitted %q with %d task replicas", js.Name, len(j.Tasks)))
	mg.auc.placeReady()
}

// restore reloads job records after a restart (Reclaim). Tasks this node
// was running died with it and are placed again; tasks elsewhere keep
// their state until their executor reports or is seen gone.
func (mg *manager) restore(jobs []JobRecord) {
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].Submitted.Before(jobs[j].Submitted) })
	var finished []*JobRecord
	defer func() { mg.retireRestored(finished) }()
	for _, jr := range jobs {
		if _, dup := mg.jobs[jr.ID]; dup {
			continue
		}
		j := jr.Clone()
		mg.jobs[j.ID] = &j
		mg.jobOrder = append(mg.jobOrder, j.ID)
		if j.State.Terminal() {
			finished = append(finished, &j)
			continue
		}
		mg.active = append(mg.active, j.ID)
		mg.dl.activate(j.ID)
		mg.dl.retimeJob(j.ID)
		j.Manager = mg.cfg.Self
		var ended []TaskStatus // attempts here that finished while the node was down
		for i := range j.Tasks {
			t := &j.Tasks[i]
			if x, ok := mg.fo.reclaim.exits[t.Key]; ok && x.Epoch == t.Epoch && t.Node == mg.cfg.Self && (t.State == TaskAwarded || t.State == TaskRunning) {
				delete(mg.fo.reclaim.exits, t.Key)
				st := TaskStatus{Key: t.Key, Epoch: t.Epoch, Attempt: t.Attempts, Node: mg.cfg.Self, State: TaskSucceeded, ExitCode: x.ExitCode, Reason: x.Reason, Time: x.Time, Outputs: x.Outputs}
				if x.ExitCode != 0 {
					st.State = TaskFailed
				}
				if t.State == TaskAwarded {
					ended = append(ended, TaskStatus{Key: t.Key, Epoch: t.Epoch, Attempt: t.Attempts, Node: mg.cfg.Self, State: TaskRunning, Time: x.Time})
				}
				ended = append(ended, st)
				continue
			}
			if (t.State == TaskAwarded || t.State == TaskRunning) && t.Node == mg.cfg.Self {
				if k := mg.con.running[t.Key]; k != nil && k.spec.Epoch == t.Epoch && !j.isGang(t.Key.Task) {
					// Its process outlived the node's crash and was
					// re-attached (Resume): it runs on, and reports.
					t.LeaseUntil = mg.now.Add(mg.cfg.LeaseTimeout)
					mg.dl.retimeJob(t.Key.Job)
					continue
				}
				if r := mg.con.resultOf[resultID{t.Key, t.Epoch, t.Attempts}]; r != nil && !j.isGang(t.Key.Task) {
					// Re-attached, it ended while the job was held back
					// (Reclaim): its report waits for the job.
					if t.State == TaskAwarded {
						ended = append(ended, TaskStatus{Key: t.Key, Epoch: t.Epoch, Attempt: t.Attempts, Node: mg.cfg.Self, State: TaskRunning, Time: r.st.Time})
					}
					ended = append(ended, r.st)
					continue
				}
				if j.isGang(t.Key.Task) {
					// A gang runs whole or not at all: its other replicas
					// are stopped and the gang is placed again.
					mg.gang.gangReplicaEnded(&j, t, TaskStatus{Key: t.Key, Epoch: t.Epoch, Node: mg.cfg.Self, State: TaskPreempted, ExitCode: -1, Reason: "node restarted"})
					continue
				}
				mg.move(&j, t, lost(mg.now, "node restarted"))
			} else if t.State == TaskAwarded || t.State == TaskRunning {
				t.LeaseUntil = mg.now.Add(mg.cfg.LeaseTimeout) // give executors time to report
				mg.dl.retimeJob(t.Key.Job)
			}
		}
		for _, st := range ended {
			mg.onTaskStatus(st)
		}
		mg.touch(j.ID)
	}
	mg.auc.placeReady()
}

// Cancel cancels a job: queued and running replicas are stopped, nothing
// new is placed. Cancelling a finished job is an error.
func (m *Market) Cancel(now time.Time, id, reason string) error {
	m.enter(now)
	defer m.leave()
	j, ok := m.jobs[id]
	if !ok {
		if _, held := m.fo.reclaim.held[id]; held {
			return fmt.Errorf("market: job %s is being restored after this node restarted (its peers are asked whether one of them took it over); try again in a few seconds", id)
		}
		return fmt.Errorf("market: no job %s", id)
	}
	if j.State.Terminal() {
		return fmt.Errorf("market: job %s already %s", id, j.State)
	}
	m.mgr.endJob(j, JobCancelled, reason)
	return nil
}

// Job returns a copy of a job record this node manages.
func (m *Market) Job(id string) (JobRecord, bool) {
	j, ok := m.jobs[id]
	if !ok {
		return JobRecord{}, false
	}
	c := j.Clone()
	m.auc.explain(&c)
	return c, true
}

// JobCounts returns how many jobs this node manages in each state,
// without copying their records.
func (m *Market) JobCounts() map[JobState]int {
	out := make(map[JobState]int, len(JobStates))
	for _, j := range m.jobs {
		out[j.State]++
	}
	return out
}

// Jobs returns copies of all job records this node manages, oldest first.
func (m *Market) Jobs() []JobRecord {
	out := make([]JobRecord, 0, len(m.jobs))
	seen := make(map[string]bool, len(m.jobs))
	for _, id := range m.jobOrder {
		// jobOrder may still name forgotten jobs, and a job forgotten and
		// restored again twice.
		if j := m.jobs[id]; j != nil && !seen[id] {
			seen[id] = true
			c := j.Clone()
			m.auc.explain(&c)
			out = append(out, c)
		}
	}
	return out
}

func (sh *shared) find(k TaskKey) (*JobRecord, *TaskRecord) {
	j, ok := sh.jobs[k.Job]
	if !ok {
		return nil, nil
	}
	return j, sh.taskOf(j, k)
}

// taskIndexFrom is the job size from which taskOf keeps an index of the
// job's records; below it a scan is as fast.
const taskIndexFrom = 32

// taskOf returns replica k's record in j. A job's records are laid out a
// task after another, each task's replicas in order (newJobRecord), so for
// large jobs m.firstRecord caches where each task's first replica is; a
// record found elsewhere (a layout the cache does not know) is scanned for.
func (sh *shared) taskOf(j *JobRecord, k TaskKey) *TaskRecord {
	if len(j.Tasks) < taskIndexFrom {
		return j.task(k)
	}
	first := sh.firstRecord[j.ID]
	if first == nil {
		first = make(map[string]int, len(j.Spec.Tasks))
		for i := len(j.Tasks) - 1; i >= 0; i-- {
			first[j.Tasks[i].Key.Task] = i
		}
		sh.firstRecord[j.ID] = first
	}
	if i, ok := first[k.Task]; ok && k.Replica >= 0 && i+k.Replica < len(j.Tasks) && j.Tasks[i+k.Replica].Key == k {
		return &j.Tasks[i+k.Replica]
	}
	return j.task(k)
}

// activeJobs returns the IDs of the jobs not yet finished, in submission
// order, dropping finished ones from the index as it goes: the periodic
// work of a manager costs what is live, not everything it ever ran.
func (sh *shared) activeJobs() []string {
	keep := sh.active[:0]
	for _, id := range sh.active {
		if j := sh.jobs[id]; j != nil && !j.State.Terminal() {
			keep = append(keep, id)
		}
	}
	sh.active = keep
	return keep
}

// tasksOf yields the task replicas of jobs, job by job, skipping a job
// that has finished by its turn.
func tasksOf(jobs []*JobRecord) iter.Seq2[*JobRecord, *TaskRecord] {
	return func(yield func(*JobRecord, *TaskRecord) bool) {
		for _, j := range jobs {
			if j.State.Terminal() {
				continue
			}
			for i := range j.Tasks {
				if !yield(j, &j.Tasks[i]) {
					return
				}
			}
		}
	}
}

// openTasks yields the task replicas of the unfinished jobs this node
// manages, job by job; whether a job is unfinished is checked as its
// turn comes.
func (sh *shared) openTasks() iter.Seq2[*JobRecord, *TaskRecord] {
	return func(yield func(*JobRecord, *TaskRecord) bool) {
		for _, id := range sh.activeJobs() {
			j := sh.jobs[id]
			if j == nil || j.State.Terminal() {
				continue
			}
			for i := range j.Tasks {
				if !yield(j, &j.Tasks[i]) {
					return
				}
			}
		}
	}
}
