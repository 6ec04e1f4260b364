package market

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/spec"
)

// Trust. A market with an authority (Config.Trust) runs signed jobs
// only: a job is submitted as a ticket (market/auth: the spec in
// canonical form, spec.Canonical, signed with the user's key, with the
// user's certificate chain), its ID derived from the signature, its owner the signer. The
// ticket travels with the job: in its record (so that an adopter checks
// it too), and in the calls for bids, awards and holds a manager sends a
// peer that does not have it yet. Every contractor checks a job's ticket
// — signature, chain, revocations, the user's quota against its own
// site — before it bids, and runs for an award or hold the task it
// builds from the ticket's spec, taking from the message only what the
// manager decides (derive); an award it did not bid for is declined (but for a replica stolen for it, which it asked for). The
// checks are cached per job; a revocation empties the cache.

// Refusal reasons the market reports (Refused); docs/security.md says
// what each stops.
const (
	RefuseSender     = "forged_sender"     // a message claiming another node as its sender
	RefuseUnbid      = "unsolicited_award" // an award or hold for an auction this node did not bid in
	RefuseTicket     = "bad_ticket"        // a job ticket that does not verify, or a task it does not sign
	RefuseQuota      = "quota"             // a task beyond its user's quota
	RefuseReport     = "stale_report"      // a task report from a node not holding the replica's current award
	RefuseRecord     = "unverified_record" // a job-record copy whose ticket does not verify
	RefuseSteal      = "steal_refused"     // a steal request for work the thief cannot hold
	RefuseSubmission = "submission"        // a submission refused
)

func (tk *tickets) refuse(reason string, from NodeID, job, text string) {
	tk.emit(Refused{Reason: reason, From: from})
	tk.event(job, text)
}

// errUnsigned refuses a plain submission in a network with an authority.
var errUnsigned = errors.New("this network runs signed jobs only: submit with a credential (agora submit --credential)")

// SubmitTicket accepts a signed job: the ticket must verify, be fresh,
// carry a valid spec within its user's quota, and not have been submitted
// here before. It returns the job's ID.
func (m *Market) SubmitTicket(now time.Time, raw []byte) (string, error) {
	m.enter(now)
	defer m.leave()
	if !m.tix.trusted() {
		return "", errors.New("this node has no authority to check a signed job against (start it with --trust)")
	}
	info, err := m.tix.check(m.now, raw, true)
	if err != nil {
		return "", err
	}
	if err := info.ticket.CheckFresh(m.now); err != nil {
		return "", err
	}
	if err := auth.CheckJob(info.user.Name, info.user.Quota, info.spec); err != nil {
		return "", err
	}
	if err := info.spec.Pinned(); err != nil {
		return "", err
	}
	id := info.ticket.JobID()
	if mgr, ok := m.KnownJob(id); ok {
		return "", &Submitted{Job: id, Manager: mgr}
	}
	m.tix.remember(id, info)
	m.mgr.submit(id, *info.spec, info.user.Name, raw)
	return id, nil
}

// Submitted is the refusal of a ticket whose job this node knows already:
// a ticket is accepted once in the network, and a submission of it again
// is answered with the job and its manager.
type Submitted struct {
	Job     string
	Manager NodeID
}

func (e *Submitted) Error() string {
	return fmt.Sprintf("job %s was submitted already; %s manages it", e.Job, e.Manager)
}

// KnownJob is the manager of job id as this node knows it: itself, when
// it manages the job (or holds it back after a restart), the manager it
// gave the job up to, or the manager of the copy of its record it holds.
func (m *Market) KnownJob(id string) (NodeID, bool) {
	if _, ok := m.jobs[id]; ok {
		return m.cfg.Self, true
	}
	if _, ok := m.fo.reclaim.held[id]; ok {
		return m.cfg.Self, true
	}
	if mgr, ok := m.sp.yieldedTo[id]; ok {
		return mgr, true
	}
	if mgr, ok := m.fo.copies.manager[id]; ok {
		return mgr, true
	}
	return "", false
}

// Revoked takes a revocation: the market stops trusting what it
// withdraws (a user's next jobs, a node's certificate: the node's
// admission layer drops the node itself).
func (m *Market) Revoked(now time.Time, r auth.Revocation) {
	m.enter(now)
	defer m.leave()
	if !m.tix.trusted() {
		return
	}
	added, err := m.tix.book.Revoke(r, m.now)
	if err != nil {
		m.event("", fmt.Sprintf("revocation of %s refused: %v", r.Target, err))
		return
	}
	if added {
		m.tix.recheck(m.now)
		m.event("", fmt.Sprintf("revocation of %s taken", r.Target))
	}
}

// checkOffer checks that a call for bids asks what the job's ticket
// signs, within its user's quota and at a site the user may use.
func (tk *tickets) checkOffer(info *ticketInfo, o TaskOffer) error {
	ts, ok := info.spec.Task(o.Key.Task)
	switch {
	case !ok:
		return fmt.Errorf("the signed job has no task %s", o.Key.Task)
	case o.Key.Replica >= max(ts.Replicas, 1):
		return fmt.Errorf("the signed job's task %s has %d replicas, not %d", ts.Name, max(ts.Replicas, 1), o.Key.Replica+1)
	case o.Priority != info.spec.Priority:
		return fmt.Errorf("priority %d, the signed job's is %d", o.Priority, info.spec.Priority)
	case !reflect.DeepEqual(o.Request, ts.Request):
		return fmt.Errorf("task %s asks for other resources than the signed job", ts.Name)
	}
	return auth.CheckTask(info.user.Name, info.user.Quota, ts.Name, o.Request, o.Priority, tk.cfg.Site)
}

// signedTask is a replica's task as its job's spec alone decides it.
// A manager builds every award and hold on it (withDecisions adds what
// the manager decides), and a contractor in a network with an authority
// rebuilds the task it runs from the ticket's spec with it (derive): a
// field set here is sent and enforced by the same line. gang: the
// replica is one of a gang (GangSize, Pack).
func signedTask(js *spec.Job, ts *spec.Task, owner string, gang bool) TaskSpec {
	s := TaskSpec{
		TaskOffer: TaskOffer{Type: js.Type, Priority: js.Priority, Deadline: js.Deadline, Request: ts.Request},
		Command:   ts.Command, Env: ts.Env, Timeout: ts.Timeout, CheckpointInterval: ts.CheckpointInterval,
		Owner: owner, Outputs: ts.Outputs, Image: ts.Image, ImageID: ts.ImageID,
	}
	if gang {
		s.GangSize, s.Pack = ts.Replicas, ts.Pack
	}
	return s
}

// withDecisions is s with what a replica's manager decides taken from
// d: which replica, the epoch and attempt, a gang rank and its peers,
// the earlier placements, where the inputs come from (checked against
// the spec by signedInputs) and the runtime estimate it offers. Nothing
// else of an award reaches the task a contractor runs with an authority.
func (s TaskSpec) withDecisions(d TaskSpec) TaskSpec {
	s.Key, s.Estimate, s.TaskOffer.Inputs = d.Key, d.Estimate, d.TaskOffer.Inputs
	s.Epoch, s.Attempt, s.Rank, s.Peers = d.Epoch, d.Attempt, d.Rank, d.Peers
	s.Previous, s.Inputs = d.Previous, d.Inputs
	return s
}

// withArrayIndex is s with, for a replica of an array task (spec.Array),
// its index, the array's size and its value (if any) among its variables: the manager and,
// with an authority, the contractor derive them alike from the spec.
func (s TaskSpec) withArrayIndex(ts *spec.Task) TaskSpec {
	a, ok := ts.ArrayOf()
	if !ok || s.Key.Replica >= len(a.Indices) {
		return s
	}
	env := make(map[string]string, len(s.Env)+3)
	maps.Copy(env, s.Env)
	env[ArrayIndexVar] = strconv.Itoa(a.Indices[s.Key.Replica])
	env[ArrayCountVar] = strconv.Itoa(len(a.Indices))
	if s.Key.Replica < len(ts.ArrayValues) {
		env[ArrayValueVar] = ts.ArrayValues[s.Key.Replica]
	}
	s.Env = env
	return s
}

// The variables an array task's replica is told its index, the array's
// size and its own parameter (spec's array_values) in.
const (
	ArrayIndexVar = "AGORA_ARRAY_INDEX"
	ArrayCountVar = "AGORA_ARRAY_COUNT"
	ArrayValueVar = "AGORA_ARRAY_VALUE"
)

// derive is the task an award or hold (gang) makes this node run, built
// from the job's signed spec and its signer, with only the manager's
// decisions taken from the message; it fails when the message names a
// task or replica the spec does not have, places inputs the spec does
// not name, or the signed task is over its user's quota here.
func (tk *tickets) derive(info *ticketInfo, s TaskSpec, gang bool) (TaskSpec, error) {
	ts, ok := info.spec.Task(s.Key.Task)
	switch {
	case !ok:
		return TaskSpec{}, fmt.Errorf("the signed job has no task %s", s.Key.Task)
	case s.Key.Replica >= max(ts.Replicas, 1):
		return TaskSpec{}, fmt.Errorf("the signed job's task %s has %d replicas, not %d", ts.Name, max(ts.Replicas, 1), s.Key.Replica+1)
	}
	if err := signedInputs(ts, s.Inputs); err != nil {
		return TaskSpec{}, err
	}
	d := signedTask(info.spec, ts, info.user.Name, gang).withDecisions(s).withArrayIndex(ts)
	if f := differs(reflect.ValueOf(d), reflect.ValueOf(s)); f != "" {
		// What runs is d whatever the message says; a manager that says
		// otherwise is refused, to be reported.
		return TaskSpec{}, fmt.Errorf("task %s: the %s is not the signed job's", ts.Name, f)
	}
	return d, auth.CheckTask(info.user.Name, info.user.Quota, ts.Name, d.Request, d.Priority, tk.cfg.Site)
}

// differs names the first field, by its JSON name, in which two values
// of one struct type differ, or "": every field, embedded structs field
// by field, so that a field added to TaskSpec is compared without anyone
// listing it.
func differs(a, b reflect.Value) string {
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if d := differs(a.Field(i), b.Field(i)); d != "" {
				return d
			}
			continue
		}
		if same(a.Field(i), b.Field(i)) {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		return strings.TrimSuffix(name, "_ns")
	}
	return ""
}

// same is deep equality as the wire sees it: an empty slice or map is a
// nil one, and times are equal instants.
func same(x, y reflect.Value) bool {
	switch x.Kind() {
	case reflect.Struct:
		if t, ok := x.Interface().(time.Time); ok {
			return t.Equal(y.Interface().(time.Time))
		}
		for i := range x.NumField() {
			if !x.Type().Field(i).IsExported() {
				return reflect.DeepEqual(x.Interface(), y.Interface())
			}
			if !same(x.Field(i), y.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if x.Len() != y.Len() {
			return false
		}
		for i := range x.Len() {
			if !same(x.Index(i), y.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if x.Len() != y.Len() {
			return false
		}
		for _, k := range x.MapKeys() {
			v := y.MapIndex(k)
			if !v.IsValid() || !same(x.MapIndex(k), v) {
				return false
			}
		}
		return true
	case reflect.Pointer:
		if x.IsNil() || y.IsNil() {
			return x.IsNil() == y.IsNil()
		}
		return same(x.Elem(), y.Elem())
	}
	return reflect.DeepEqual(x.Interface(), y.Interface())
}

// HeldCopy is what a node holds of a job whose record a peer pushes: the
// manager of its copy and the nodes that copy was replicated to.
type HeldCopy struct {
	Manager NodeID
	Holders []NodeID
}

// CheckReplica says why a job-record copy pushed by from must not be
// kept, or nil: its manager must be the sender, its spec valid and, in
// a network with an authority (book not nil), its ticket must verify at
// now, name the job and its owner, and sign the spec the record holds.
// A copy that moves a job held here (held not nil) to another manager is
// kept only from one of the held copy's holders: a job changes manager
// only when one of the nodes holding its record adopts it.
func CheckReplica(book *auth.Book, now time.Time, from NodeID, rec JobRecord, held *HeldCopy) error {
	return (&ReplicaChecker{}).Check(book, now, from, rec, held)
}

// ReplicaChecker is CheckReplica with a memory of the tickets it
// verified: a manager sends a job's record at every change, and
// verifying its ticket and parsing the spec it signs each time would
// cost a holder far more than the change. A remembered ticket is taken
// again while the book holds no new revocation and its chain has not
// expired. Not safe for concurrent use.
type ReplicaChecker struct {
	revs int // the book's revocations when the memory was made
	seen map[[32]byte]checkedTicket
}

// checkedTicket is what a verified ticket says.
type checkedTicket struct {
	job, owner string
	spec       string // the JSON of the spec it signs
	until      time.Time
	valid      bool // that spec, read from these bytes, validated
}

// maxCheckedTickets bounds a ReplicaChecker's memory; it starts afresh
// when full.
const maxCheckedTickets = 4096

// Check is CheckReplica.
func (c *ReplicaChecker) Check(book *auth.Book, now time.Time, from NodeID, rec JobRecord, held *HeldCopy) error {
	if rec.Manager != from {
		return fmt.Errorf("record's manager %s is not the sender %s", rec.Manager, from)
	}
	if held != nil && held.Manager != from && !slices.Contains(held.Holders, from) {
		return fmt.Errorf("job %s is managed by %s; %s does not hold its record", rec.ID, held.Manager, from)
	}
	if rec.ID == "" {
		return errors.New("invalid job record: no job ID")
	}
	if book == nil {
		if err := rec.Spec.Validate(); err != nil {
			return fmt.Errorf("invalid job record: %v", err)
		}
		return nil
	}
	ct, digest, err := c.ticket(book, now, rec)
	if err != nil {
		return err
	}
	switch {
	case ct.job != rec.ID:
		return fmt.Errorf("job record %s: its ticket names job %s", rec.ID, ct.job)
	case rec.Owner != ct.owner:
		return fmt.Errorf("job record %s: owner %q, its ticket's signer is %s", rec.ID, rec.Owner, ct.owner)
	}
	// A spec read from the ticket's own bytes is the same at every copy:
	// it is validated once per ticket.
	if !rec.specSigned || !ct.valid {
		if err := rec.Spec.Validate(); err != nil {
			return fmt.Errorf("invalid job record: %v", err)
		}
	}
	if rec.specSigned {
		ct.valid = true
		c.seen[digest] = ct
		return nil
	}
	if b, _ := json.Marshal(rec.Spec); string(b) != ct.spec {
		return fmt.Errorf("job record %s: the spec is not the one its ticket signs", rec.ID)
	}
	return nil
}

// ticket verifies a record's ticket, or recalls having done so.
func (c *ReplicaChecker) ticket(book *auth.Book, now time.Time, rec JobRecord) (checkedTicket, [32]byte, error) {
	digest := sha256.Sum256(rec.Ticket)
	if n := book.Len(); n != c.revs || len(c.seen) >= maxCheckedTickets {
		c.revs, c.seen = n, nil
	}
	if ct, ok := c.seen[digest]; ok && now.Before(ct.until) {
		return ct, digest, nil
	}
	t, err := auth.DecodeTicket(rec.Ticket)
	if err != nil {
		return checkedTicket{}, digest, fmt.Errorf("job record %s: %w", rec.ID, err)
	}
	user, err := book.VerifyTicket(&t, now)
	if err != nil {
		return checkedTicket{}, digest, fmt.Errorf("job record %s: %w", rec.ID, err)
	}
	// The ticket signs the spec in canonical form (spec.Canonical): the
	// record's spec must encode to exactly those bytes.
	ct := checkedTicket{job: t.JobID(), owner: user.Name, spec: string(t.Spec), until: user.NotAfter}
	if c.seen == nil {
		c.seen = map[[32]byte]checkedTicket{}
	}
	c.seen[digest] = ct
	return ct, digest, nil
}

// vouch checks, in a network with an authority, that a call for bids is
// for a signed job this node may run; when not, it answers NoBid itself
// and returns false.
func (tk *tickets) vouch(cfp CFP) bool {
	job := cfp.Auction.Key.Job
	nb := NoBid{Auction: cfp.Auction, Bidder: tk.cfg.Self, Permanent: true}
	info, err := tk.job(tk.now, job, cfp.Ticket)
	switch {
	case errors.Is(err, errNeedTicket):
		nb.Reason, nb.NeedTicket, nb.Permanent = "no ticket of job "+job+" here", true, false
	case err != nil:
		nb.Reason = "job ticket: " + err.Error()
		tk.refuse(RefuseTicket, cfp.Manager, job, fmt.Sprintf("%s: call for bids refused: %s", cfp.Auction.Key, nb.Reason))
	default:
		if tk.cfg.LocalUser != nil {
			if why := tk.cfg.LocalUser(info.user.Name); why != "" {
				nb.Reason = why
				break
			}
		}
		err = tk.checkOffer(info, cfp.Task)
		if err == nil {
			return true
		}
		nb.Reason = err.Error()
		reason := RefuseTicket
		var r *auth.Refusal
		if errors.As(err, &r) {
			reason = RefuseQuota
		}
		tk.refuse(reason, cfp.Manager, job, fmt.Sprintf("%s: call for bids refused: %s", cfp.Auction.Key, nb.Reason))
	}
	tk.send(cfp.Manager, nb)
	return false
}

// stealWindow is how long after asking for work a node takes a replica
// awarded to it without a bid (a stolen one).
const stealWindow = bidMemory

// mayTake says why this node must not accept an award, or "": it must
// have bid in its auction (or, for a stolen replica, asked for work
// lately). It returns the task to run: in a network with an authority
// the one the job's ticket signs (derive), else the award's.
func (tk *tickets) mayTake(a Award) (TaskSpec, string) {
	c := tk.con
	if why := tk.cfg.Limits.Refusal(a.Task.Request); why != "" {
		return TaskSpec{}, why
	}
	if a.Direct {
		if tk.con.stolen.IsZero() || tk.now.Sub(tk.con.stolen) > stealWindow {
			tk.refuse(RefuseUnbid, a.Manager, a.Task.Key.Job, fmt.Sprintf("%s: award of a stolen replica refused: this node asked for no work", a.Task.Key))
			return TaskSpec{}, "this node asked for no work"
		}
	} else if !c.bidFor(a.Auction, tk.now, true) {
		tk.refuse(RefuseUnbid, a.Manager, a.Task.Key.Job, fmt.Sprintf("%s: award refused: this node made no bid in round %d of epoch %d", a.Task.Key, a.Auction.Round, a.Auction.Epoch))
		return TaskSpec{}, "this node made no bid in that auction"
	}
	return tk.localUser(tk.checkAward(a.Manager, a.Task, a.Ticket, false))
}

// localUser refuses an award or hold of a task whose owner has no local
// account here (Config.LocalUser): a stolen replica is taken without a
// call for bids.
func (tk *tickets) localUser(ts TaskSpec, why string) (TaskSpec, string) {
	if why == "" && tk.cfg.LocalUser != nil {
		why = tk.cfg.LocalUser(ts.Owner)
	}
	return ts, why
}

// mayHold is mayTake for a gang's hold.
func (tk *tickets) mayHold(h Hold) (TaskSpec, string) {
	if why := tk.cfg.Limits.Refusal(h.Task.Request); why != "" {
		return TaskSpec{}, why
	}
	if !tk.con.bidFor(h.Auction, tk.now, false) {
		tk.refuse(RefuseUnbid, h.Manager, h.Task.Key.Job, fmt.Sprintf("%s: hold refused: this node made no bid in round %d of epoch %d", h.Task.Key, h.Auction.Round, h.Auction.Epoch))
		return TaskSpec{}, "this node made no bid in that auction"
	}
	return tk.localUser(tk.checkAward(h.Manager, h.Task, h.Ticket, true))
}

// checkAward is, in a network with an authority, the task an award or
// hold runs, derived from its job's ticket; in an open one the
// message's own.
func (tk *tickets) checkAward(from NodeID, s TaskSpec, ticket []byte, gang bool) (TaskSpec, string) {
	if !tk.trusted() {
		return s, ""
	}
	info, err := tk.job(tk.now, s.Key.Job, ticket)
	var d TaskSpec
	if err == nil {
		d, err = tk.derive(info, s, gang)
	}
	if err != nil {
		tk.refuse(RefuseTicket, from, s.Key.Job, fmt.Sprintf("%s: task refused: %v", s.Key, err))
		return TaskSpec{}, "job ticket: " + err.Error()
	}
	if why := tk.cfg.Limits.Refusal(d.Request); why != "" {
		return TaskSpec{}, why
	}
	return d, ""
}

// startable checks again, as a queued replica starts, that its job's
// ticket still holds (a revocation or an expiry since the award).
func (tk *tickets) startable(k *contract) error {
	if !tk.trusted() || k.ticket == nil {
		return nil
	}
	raw := k.ticket
	if _, ok := tk.byJob[k.spec.Key.Job]; ok {
		raw = nil // checked when the award came; a revocation since empties the cache
	}
	_, err := tk.job(tk.now, k.spec.Key.Job, raw)
	return err
}

// withTicket is a broadcast call for bids with its job's ticket: its
// audience is unknown.
func (tk *tickets) withTicket(cfp CFP) CFP {
	if j := tk.jobs[cfp.Auction.Key.Job]; tk.trusted() && j != nil {
		cfp.Ticket = j.Ticket
	}
	return cfp
}

// MayResumeFrom reports whether a checkpoint that node made at epoch may
// seed the attempt t starts on self: only one this node made itself, or
// one made by an earlier placement of the replica that its manager
// recorded (t.Previous) at that placement's epoch. A peer that never held
// the award cannot plant the snapshot a task resumes from.
func (t TaskSpec) MayResumeFrom(self, node NodeID, epoch uint64) bool {
	if epoch > t.Epoch {
		return false
	}
	if node == self {
		return true
	}
	for _, p := range t.Previous {
		if p.Node == node && p.Epoch == epoch {
			return true
		}
	}
	return false
}
