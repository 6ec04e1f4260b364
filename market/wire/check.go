package wire

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/names"
	"github.com/agora-sched/agora/market/spec"
)

// FieldError is a message rejected for one field's value. Its Error text
// is "wire: <field>: <problem>".
type FieldError struct {
	// Field is the offending field's path in proto terms, such as
	// "award.task.offer.request.gpu.share_milli" or "cfp.task.key.job".
	Field string
	// Problem says what is wrong with it.
	Problem string
}

// Error renders the error as "wire: field: problem".
func (e *FieldError) Error() string { return "wire: " + e.Field + ": " + e.Problem }

// bad returns a *FieldError for field.
func bad(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Bounds of a time on the wire: set times lie strictly after the Unix
// epoch (0 stands for the zero time) and within int64 nanoseconds.
var (
	minTime = time.Unix(0, 1)
	maxTime = time.Unix(0, math.MaxInt64)
)

// taskStates are the states a TaskStatus may carry.
var taskStates = map[market.TaskState]bool{
	market.TaskWaiting: true, market.TaskPending: true, market.TaskAwarded: true,
	market.TaskRunning: true, market.TaskSucceeded: true, market.TaskFailed: true,
	market.TaskCancelled: true, market.TaskPreempted: true,
}

// checkOptionalNode checks a node ID that may be empty.
func checkOptionalNode(p string, id market.NodeID) error {
	if id == "" {
		return nil
	}
	return checkNodeID(p, id)
}

// checkJobState checks that s names a job state.
func checkJobState(p string, s market.JobState) error {
	for _, k := range market.JobStates {
		if s == k {
			return nil
		}
	}
	if s == "" {
		return bad(p, "required")
	}
	return bad(p, "unknown job state %s", show(string(s)))
}

// finalStates are the states that end an attempt: a report of one may
// ask for a ResultAck.
var finalStates = map[market.TaskState]bool{
	market.TaskSucceeded: true, market.TaskFailed: true,
	market.TaskCancelled: true, market.TaskPreempted: true,
}

// show quotes s for an error message, clipped so that a hostile value
// cannot bloat the error.
func show(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

func join(path, name string) string { return path + "." + name }

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func keyPath(path, k string) string { return path + "[" + show(k) + "]" }

// checkMsg checks every field of a market message. m must be one of the
// market's message values.
func checkMsg(m market.Msg) error {
	switch x := m.(type) {
	case market.CFP:
		return checkCFP("cfp", x)
	case market.Bid:
		return checkBid("bid", x)
	case market.NoBid:
		return firstErr(
			checkAuction("no_bid.auction", x.Auction),
			checkNodeID("no_bid.bidder", x.Bidder),
			checkReason("no_bid.reason", x.Reason),
		)
	case market.Award:
		return firstErr(
			checkAuction("award.auction", x.Auction),
			checkNodeID("award.manager", x.Manager),
			checkSpec("award.task", x.Task),
			checkBid("award.bid", x.Bid),
			checkTicket("award.ticket", x.Ticket),
		)
	case market.AwardReply:
		return firstErr(
			checkAuction("award_reply.auction", x.Auction),
			checkNodeID("award_reply.bidder", x.Bidder),
			checkReason("award_reply.reason", x.Reason),
			checkTime("award_reply.start_unix_nano", x.Start),
		)
	case market.TaskStatus:
		return checkStatus("task_status", x)
	case market.ResultAck:
		return firstErr(
			checkKey("result_ack.key", x.Key),
			checkRange("result_ack.attempt", x.Attempt, 0, MaxCounter),
		)
	case market.CancelTask:
		return firstErr(
			checkKey("cancel_task.key", x.Key),
			checkReason("cancel_task.reason", x.Reason),
		)
	case market.Hold:
		return firstErr(
			checkAuction("hold.auction", x.Auction),
			checkNodeID("hold.manager", x.Manager),
			checkSpec("hold.task", x.Task),
			checkRequiredTime("hold.expires_unix_nano", x.Expires),
			checkTicket("hold.ticket", x.Ticket),
		)
	case market.HoldReply:
		return firstErr(
			checkAuction("hold_reply.auction", x.Auction),
			checkNodeID("hold_reply.bidder", x.Bidder),
			checkRange("hold_reply.replica", x.Replica, 0, MaxReplica),
			checkReason("hold_reply.reason", x.Reason),
		)
	case market.Commit:
		return firstErr(
			checkKey("commit.key", x.Key),
			checkRange("commit.rank", x.Rank, 0, MaxRank),
			checkPeers("commit.peers", x.Peers),
		)
	case market.Release:
		return checkKey("release.key", x.Key)
	case market.Reserve:
		return firstErr(
			checkAuction("reserve.auction", x.Auction),
			checkNodeID("reserve.manager", x.Manager),
			checkRequest("reserve.request", x.Request),
			checkRange("reserve.priority", x.Priority, MinPriority, MaxPriority),
			checkTime("reserve.until_unix_nano", x.Until),
			checkTime("reserve.since_unix_nano", x.Since),
		)
	case market.StealRequest:
		return firstErr(
			checkNodeID("steal_request.thief", x.Thief),
			checkRequest("steal_request.room", x.Room),
			checkRange("steal_request.max", x.Max, 1, MaxStealTasks),
			checkTime("steal_request.ends_by_unix_nano", x.EndsBy),
		)
	case market.Transfer:
		return firstErr(
			checkKey("transfer.key", x.Key),
			checkNodeID("transfer.from", x.From),
			checkNodeID("transfer.to", x.To),
		)
	case market.ManagerQuery:
		return firstErr(
			checkJobID("manager_query.job", x.Job),
			checkNodeID("manager_query.from", x.From),
		)
	case market.ManagerAnswer:
		return firstErr(
			checkJobID("manager_answer.job", x.Job),
			checkNodeID("manager_answer.from", x.From),
			checkOptionalNode("manager_answer.successor", x.Successor),
		)
	case market.ManagerClaim:
		return firstErr(
			checkJobID("manager_claim.job", x.Job),
			checkNodeID("manager_claim.from", x.From),
			checkJobState("manager_claim.state", x.Rank.State),
			checkRange("manager_claim.succeeded", x.Rank.Succeeded, 0, spec.MaxJobReplicas),
			checkRange("manager_claim.running", x.Rank.Running, 0, spec.MaxJobReplicas),
			checkOptionalNode("manager_claim.taken_from", x.Rank.TakenFrom),
			checkProofs("manager_claim.proofs", x.Proofs),
		)
	}
	return fmt.Errorf("wire: unsupported message type %T", m)
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func checkCFP(p string, c market.CFP) error {
	return firstErr(
		checkAuction(join(p, "auction"), c.Auction),
		checkNodeID(join(p, "manager"), c.Manager),
		checkOffer(join(p, "task"), c.Task),
		checkTicket(join(p, "ticket"), c.Ticket),
	)
}

// checkTicket bounds a ticket's size; what it says is the market's to
// check (market/auth).
func checkTicket(p string, t []byte) error {
	if len(t) > auth.MaxTicketBytes {
		return bad(p, "%d bytes, over the limit of %d", len(t), auth.MaxTicketBytes)
	}
	return nil
}

// checkPrevious checks a replica's earlier placements.
func checkPrevious(p string, ps []market.Placement) error {
	if len(ps) > MaxPrevious {
		return bad(p, "%d placements, over the limit of %d", len(ps), MaxPrevious)
	}
	for i, x := range ps {
		if err := checkNodeID(join(index(p, i), "node"), x.Node); err != nil {
			return err
		}
	}
	return nil
}

func checkBid(p string, b market.Bid) error {
	if math.IsNaN(b.Score) || math.IsInf(b.Score, 0) {
		return bad(join(p, "score"), "%v is not a finite number", b.Score)
	}
	return firstErr(
		checkAuction(join(p, "auction"), b.Auction),
		checkNodeID(join(p, "bidder"), b.Bidder),
		checkTime(join(p, "start_unix_nano"), b.Start),
		checkTime(join(p, "finish_unix_nano"), b.Finish),
		checkRuntime(join(p, "runtime_ns"), b.Runtime),
		checkRange(join(p, "slots"), b.Slots, 0, MaxSlots),
	)
}

func checkStatus(p string, s market.TaskStatus) error {
	if err := checkKey(join(p, "key"), s.Key); err != nil {
		return err
	}
	if err := checkRange(join(p, "attempt"), s.Attempt, 0, MaxCounter); err != nil {
		return err
	}
	if err := checkNodeID(join(p, "node"), s.Node); err != nil {
		return err
	}
	if !taskStates[s.State] {
		return bad(join(p, "state"), "unknown task state %s", show(string(s.State)))
	}
	if s.AckWanted && !finalStates[s.State] {
		return bad(join(p, "ack_wanted"), "set on state %s; only a final report (succeeded, failed, cancelled, preempted) asks for an ack", show(string(s.State)))
	}
	return firstErr(
		checkRange(join(p, "exit_code"), s.ExitCode, math.MinInt32, math.MaxInt32),
		checkReason(join(p, "reason"), s.Reason),
		checkTime(join(p, "time_unix_nano"), s.Time),
		checkRuntime(join(p, "runtime_ns"), s.Runtime), checkDataRef(join(p, "outputs"), s.Outputs),
		checkProofSig(join(p, "proof"), s.Proof),
	)
}

// checkProofSig bounds an executor's signature (market/proofs.go).
func checkProofSig(p string, sig []byte) error {
	if len(sig) > MaxProofBytes {
		return bad(p, "%d bytes, over the limit of %d", len(sig), MaxProofBytes)
	}
	return nil
}

// checkProofs checks a claim's proofs: their number and each one's form;
// whether they verify is the market's to say.
func checkProofs(p string, ps []market.TaskProof) error {
	if len(ps) > market.MaxClaimProofs {
		return bad(p, "%d proofs, over the limit of %d", len(ps), market.MaxClaimProofs)
	}
	for i, x := range ps {
		q := index(p, i)
		if err := firstErr(checkKey(join(q, "key"), x.Key), checkNodeID(join(q, "node"), x.Node), checkProofSig(join(q, "sig"), x.Sig)); err != nil {
			return err
		}
	}
	return nil
}

// checkKey checks a task key.
func checkKey(p string, k market.TaskKey) error {
	return firstErr(
		checkJobID(join(p, "job"), k.Job),
		checkTaskName(join(p, "task"), k.Task),
		checkRange(join(p, "replica"), k.Replica, 0, MaxReplica),
	)
}

// checkAuction checks an auction ID.
func checkAuction(p string, a market.AuctionID) error {
	return firstErr(
		checkKey(join(p, "key"), a.Key),
		checkRange(join(p, "round"), a.Round, 0, MaxCounter),
	)
}

// checkJobID checks a job ID: required, printable, at most MaxJobIDLen
// bytes, no '/', and not "." or "..", since it names files on executors.
func checkJobID(p, id string) error {
	switch {
	case id == "":
		return bad(p, "required")
	case len(id) > MaxJobIDLen:
		return bad(p, "%d bytes, over the limit of %d", len(id), MaxJobIDLen)
	case id == "." || id == "..":
		return bad(p, "invalid job ID %s", show(id))
	case strings.IndexByte(id, '/') >= 0:
		return bad(p, "job ID %s contains '/'", show(id))
	}
	return checkPrintable(p, id)
}

// checkTaskName checks a task name as the job spec does.
func checkTaskName(p, name string) error {
	switch {
	case name == "":
		return bad(p, "required")
	case len(name) > MaxTaskNameLen:
		return bad(p, "%d bytes, over the limit of %d", len(name), MaxTaskNameLen)
	case !names.TaskName(name) || name == "." || name == "..":
		return bad(p, "invalid task name %s: want letters, digits, '_', '.' or '-' (not \".\" or \"..\")", show(name))
	}
	return nil
}

// checkNodeID checks a node ID: the text form of a libp2p peer ID, or in
// tests and the simulator any short name of the same alphabet.
func checkNodeID(p string, id market.NodeID) error {
	switch {
	case id == "":
		return bad(p, "required")
	case len(id) > MaxNodeIDLen:
		return bad(p, "%d bytes, over the limit of %d", len(id), MaxNodeIDLen)
	case !names.NodeID(string(id)):
		return bad(p, "invalid node ID %s: want letters, digits, '.', '_' or '-'", show(string(id)))
	}
	return nil
}

// checkReason checks free reason text: UTF-8, at most MaxReasonLen bytes.
func checkReason(p, s string) error {
	return checkBytes(p, s, MaxReasonLen)
}

// checkBytes checks a string of any UTF-8 text up to max bytes.
func checkBytes(p, s string, max int) error {
	if len(s) > max {
		return bad(p, "%d bytes, over the limit of %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return bad(p, "not valid UTF-8")
	}
	return nil
}

// checkText checks a name of free text: UTF-8, printable, at most max
// characters, and not empty when required.
func checkText(p, s string, max int, required bool) error {
	if s == "" {
		if required {
			return bad(p, "required")
		}
		return nil
	}
	if len(s) > 4*max {
		return bad(p, "%d bytes, over the limit of %d characters", len(s), max)
	}
	if !utf8.ValidString(s) {
		return bad(p, "not valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); n > max {
		return bad(p, "%d characters, over the limit of %d", n, max)
	}
	return checkPrintable(p, s)
}

// checkPrintable rejects invalid UTF-8 and non-printable characters.
func checkPrintable(p, s string) error {
	if !utf8.ValidString(s) {
		return bad(p, "not valid UTF-8")
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return bad(p, "contains the non-printable character %U", r)
		}
	}
	return nil
}

// checkRange checks that lo <= v <= hi.
func checkRange(p string, v, lo, hi int) error {
	if v < lo || v > hi {
		return bad(p, "%d out of range %d..%d", v, lo, hi)
	}
	return nil
}

// checkRange64 checks that lo <= v <= hi, naming negative values as such.
func checkRange64(p string, v, lo, hi int64) error {
	if v < 0 && lo == 0 {
		return bad(p, "negative value %d", v)
	}
	if v < lo || v > hi {
		return bad(p, "%d out of range %d..%d", v, lo, hi)
	}
	return nil
}

// checkTime checks a time: zero, or strictly after the Unix epoch and
// representable in int64 nanoseconds.
func checkTime(p string, t time.Time) error {
	if t.IsZero() {
		return nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return bad(p, "%s out of range (a set time lies after the Unix epoch and before %s; 0 means none)",
			t.UTC().Format(time.RFC3339Nano), maxTime.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkRequiredTime checks a time that must be set: strictly after the
// Unix epoch and representable in int64 nanoseconds.
func checkRequiredTime(p string, t time.Time) error {
	if t.IsZero() {
		return bad(p, "required")
	}
	if t.Before(minTime) || t.After(maxTime) {
		return bad(p, "%s out of range (want a time after the Unix epoch and before %s)",
			t.UTC().Format(time.RFC3339Nano), maxTime.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkDuration checks an optional duration: 0 (none) up to MaxDuration.
func checkDuration(p string, d time.Duration) error {
	switch {
	case d < 0:
		return bad(p, "negative duration %s", d)
	case d > MaxDuration:
		return bad(p, "%s is over the limit of %s", d, MaxDuration)
	}
	return nil
}

// checkRuntime checks a measured or predicted runtime: not negative.
func checkRuntime(p string, d time.Duration) error {
	if d < 0 {
		return bad(p, "negative duration %s", d)
	}
	return nil
}

// checkOffer checks a task offer.
func checkOffer(p string, o market.TaskOffer) error {
	return firstErr(
		checkKey(join(p, "key"), o.Key),
		checkText(join(p, "type"), o.Type, MaxTypeLen, false),
		checkRange(join(p, "priority"), o.Priority, MinPriority, MaxPriority),
		checkTime(join(p, "deadline_unix_nano"), o.Deadline),
		checkDuration(join(p, "estimate_ns"), o.Estimate),
		checkRequest(join(p, "request"), o.Request),
		checkRange(join(p, "gang_size"), o.GangSize, 0, MaxGangSize), checkDataRefs(join(p, "inputs"), o.Inputs),
	)
}

// checkSpec checks a task spec.
func checkSpec(p string, s market.TaskSpec) error {
	return firstErr(
		checkOffer(join(p, "offer"), s.TaskOffer),
		checkCommand(join(p, "command"), s.Command),
		checkEnv(join(p, "env"), s.Env),
		checkDuration(join(p, "timeout_ns"), s.Timeout),
		checkDuration(join(p, "checkpoint_interval_ns"), s.CheckpointInterval),
		checkRange(join(p, "attempt"), s.Attempt, 0, MaxCounter),
		checkRange(join(p, "rank"), s.Rank, 0, MaxRank),
		checkPeers(join(p, "peers"), s.Peers),
		checkOwner(join(p, "owner"), s.Owner),
		checkPrevious(join(p, "previous"), s.Previous),
		checkInputs(join(p, "inputs"), s.Inputs), checkOutputs(join(p, "outputs"), s.Outputs),
		checkImage(p, s.Image, s.ImageID),
	)
}

// checkImage checks an image task's reference and pin, as the spec's
// rules do.
func checkImage(p, image, id string) error {
	t := spec.Task{Image: image, ImageID: id}
	if image != "" {
		t.RequireContainer()
	}
	if err := spec.CheckImage(&t); err != nil {
		return bad(join(p, "image"), "%v", err)
	}
	return nil
}

// checkCommand checks an argv.
func checkCommand(p string, argv []string) error {
	switch {
	case len(argv) == 0:
		return bad(p, "required: at least the program")
	case len(argv) > MaxCommandArgs:
		return bad(p, "%d arguments, over the limit of %d", len(argv), MaxCommandArgs)
	case argv[0] == "":
		return bad(index(p, 0), "empty program name")
	}
	total := 0
	for i, a := range argv {
		total += len(a)
		if total > MaxCommandBytes {
			return bad(p, "over %d bytes of arguments", MaxCommandBytes)
		}
		if strings.IndexByte(a, 0) >= 0 {
			return bad(index(p, i), "contains a NUL byte")
		}
		if !utf8.ValidString(a) {
			return bad(index(p, i), "not valid UTF-8")
		}
	}
	return nil
}

// checkEnv checks environment variables.
func checkEnv(p string, env map[string]string) error {
	if len(env) > MaxEnvEntries {
		return bad(p, "%d variables, over the limit of %d", len(env), MaxEnvEntries)
	}
	total := 0
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v, kp := env[k], keyPath(p, k)
		total += len(k) + len(v) + 2
		switch {
		case len(k) > MaxEnvNameLen:
			return bad(kp, "name is %d bytes, over the limit of %d", len(k), MaxEnvNameLen)
		case !names.EnvName(k):
			return bad(kp, "invalid variable name: want letters, digits and '_', not starting with a digit")
		case strings.IndexByte(v, 0) >= 0:
			return bad(kp, "value contains a NUL byte")
		case !utf8.ValidString(v):
			return bad(kp, "value is not valid UTF-8")
		}
	}
	if total > MaxEnvBytes {
		return bad(p, "%d bytes of variables, over the limit of %d", total, MaxEnvBytes)
	}
	return nil
}

// checkRequest checks a resource request.
func checkRequest(p string, r resource.Request) error {
	if extra := r.Limits &^ resource.TaskLimits; extra != 0 {
		return bad(join(p, "limits"), "unknown limit bits %#x", uint8(extra))
	}
	g := join(p, "gpu")
	if err := firstErr(
		checkRange64(join(p, "cpu_milli"), r.CPU, 0, MaxCPUMilli),
		checkRange64(join(p, "memory"), r.Memory, 0, MaxBytes),
		checkRange64(join(p, "disk"), r.Disk, 0, MaxBytes),
		checkRange(join(g, "count"), r.GPU.Count, 0, MaxGPUCount),
		checkRange64(join(g, "share_milli"), r.GPU.Share, 0, MaxGPUShareMilli),
		checkRange64(join(g, "memory"), r.GPU.Memory, 0, MaxBytes),
		checkText(join(g, "model"), r.GPU.Model, MaxModelLen, false),
		checkDevices(join(p, "devices"), r.Devices),
		checkLabels(join(p, "labels"), r.Labels),
	); err != nil {
		return err
	}
	return checkText(join(p, "site"), r.Site, MaxSiteLen, false)
}

// checkDevices checks device requests.
func checkDevices(p string, devs []resource.DeviceRequest) error {
	if len(devs) > MaxDevices {
		return bad(p, "%d device requests, over the limit of %d", len(devs), MaxDevices)
	}
	for i, d := range devs {
		dp := index(p, i)
		switch {
		case d.Kind == "":
			return bad(join(dp, "kind"), "required")
		case !names.DeviceKind(d.Kind):
			return bad(join(dp, "kind"), "invalid device kind %s: want 1 to %d letters, digits, '_', '.' or '-'", show(d.Kind), MaxDeviceKindLen)
		}
		if err := firstErr(
			checkText(join(dp, "model"), d.Model, MaxModelLen, false),
			checkRange(join(dp, "count"), d.Count, 1, MaxDeviceCount),
		); err != nil {
			return err
		}
	}
	return nil
}
