package node

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agora-sched/agora/market"
)

// A node never forgets an accepted job in silence. Badger replays a
// damaged write-ahead log up to its first bad entry and drops the rest
// without an error, so the node keeps the IDs of the jobs it stores in a
// ledger of its own (store.Ledger, jobs.ledger in the data directory)
// and compares the two at start: a job the ledger names and the store
// lacks, a record that fails its checksum, or a database that does not
// open stops the node with an error naming the damaged file and what to
// do (docs/operations.md, "A damaged store").

const ledgerFile = "jobs.ledger"

// checkLedger compares the jobs loaded from the store with the ledger.
// A ledger made at this start (a new node, or the first start of a
// version with ledgers) learns the store's jobs; jobs stored and not in
// the ledger (a crash between the two writes) are added.
func (n *Node) checkLedger(jobs []market.JobRecord) error {
	have := make(map[string]bool, len(jobs))
	ids := make([]string, 0, len(jobs))
	for _, j := range jobs {
		have[j.ID] = true
		ids = append(ids, j.ID)
	}
	if !n.ledgerFresh {
		var lost []string
		for _, id := range n.ledger.Keys() {
			if !have[id] {
				lost = append(lost, id)
			}
		}
		if len(lost) > 0 {
			return n.damaged(&lostJobs{lost: lost, held: len(have) + len(lost)})
		}
	}
	return n.ledger.Add(ids...)
}

// lostJobs is jobs the ledger names and the store lacks.
type lostJobs struct {
	lost []string
	held int
}

func (e *lostJobs) Error() string {
	names := e.lost
	if len(names) > 5 {
		names = append(slices.Clone(names[:5]), "…")
	}
	return fmt.Sprintf("the store lost %d of the %d jobs this node had accepted (%s) without an error from the database",
		len(e.lost), e.held, strings.Join(names, ", "))
}

// walCopyDir holds copies of the database's write-ahead logs as they
// were before it opened them: replaying a damaged log, badger cuts it at
// the damage, and the copies keep what it cut for the operator. They
// exist only after a crash (a clean stop leaves no log) and go once the
// start's checks have passed.
const walCopyDir = "wal-at-start"

// preserveWAL copies the write-ahead logs of the database in dataDir
// (the preallocated zeros at their ends left out) and returns the
// copies' paths.
func preserveWAL(dataDir string) ([]string, error) {
	mems, _ := filepath.Glob(filepath.Join(dataDir, "db", "*.mem"))
	dst := filepath.Join(dataDir, walCopyDir)
	if err := os.RemoveAll(dst); err != nil || len(mems) == 0 {
		return nil, err
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mems {
		b, err := os.ReadFile(m)
		if err != nil {
			return nil, err
		}
		end := len(b)
		for end > 0 && b[end-1] == 0 {
			end--
		}
		c := filepath.Join(dst, filepath.Base(m))
		if err := os.WriteFile(c, b[:end], 0o600); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// dropWALCopies removes what preserveWAL kept, once the store is known
// good.
func dropWALCopies(dataDir string) {
	if err := os.RemoveAll(filepath.Join(dataDir, walCopyDir)); err != nil {
		log.Warnw("remove the write-ahead log copies", "err", err)
	}
}

// damagedStore is a store the node will not start on.
type damagedStore struct {
	dir      string
	err      error
	suspects []string // files that may hold the damage, when the error names none
}

var vlogFid = regexp.MustCompile(`Fid:(\d+)`)

func (e *damagedStore) Error() string {
	what := e.err.Error()
	db := filepath.Join(e.dir, "db")
	// Name the file where the database's error points to one.
	if m := vlogFid.FindStringSubmatch(what); m != nil && strings.Contains(what, "checksum mismatch") {
		if fid, err := strconv.Atoi(m[1]); err == nil {
			what = fmt.Sprintf("damaged value log %s: %s", filepath.Join(db, fmt.Sprintf("%06d.vlog", fid)), what)
		}
	} else if strings.Contains(strings.ToLower(what), "manifest") {
		what = fmt.Sprintf("damaged %s: %s", filepath.Join(db, "MANIFEST"), what)
	} else if len(e.suspects) > 0 {
		what += fmt.Sprintf("; the damage is in a write-ahead log or value log: %s", strings.Join(e.suspects, ", "))
	}
	return fmt.Sprintf("store in %s is damaged: %s. The node does not start on it, so that no accepted job is forgotten in silence. "+
		"To recover: restore %s from a backup; or leave this node stopped until its peers, which hold copies of its job records, "+
		"have taken its jobs over (`agora jobs --all` on a peer lists them under another manager), then move %s aside "+
		"(mv %s %s.damaged; mv %s %s.damaged) and start it again empty (docs/operations.md, \"A damaged store\")",
		e.dir, what, db, db, db, db, filepath.Join(e.dir, ledgerFile), filepath.Join(e.dir, ledgerFile))
}

func (e *damagedStore) Unwrap() error { return e.err }

// damaged is damaged with the files that may hold the damage: the value
// logs, and the copies of the write-ahead logs as they were before the
// database opened them (the logs themselves it has cut already).
func (n *Node) damaged(err error) error {
	vlogs, _ := filepath.Glob(filepath.Join(n.cfg.DataDir, "db", "*.vlog"))
	return &damagedStore{dir: n.cfg.DataDir, err: err, suspects: append(slices.Clone(n.walCopies), vlogs...)}
}

// looksDamaged reports whether the database's error at open is about the
// contents of its files, not about reaching them (a permission, a lock).
func looksDamaged(err error) bool {
	s := strings.ToLower(err.Error())
	for _, w := range []string{"checksum", "manifest", "corrupt", "magic", "truncat", "memtable", "vlog", "value log", "table", "unexpected eof"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
