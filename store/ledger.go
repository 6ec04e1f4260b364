package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Ledger is a list of keys kept outside the database, in a file of its
// own: the keys a bucket must hold. A database file damaged on disk can
// lose records without an error (badger replays a write-ahead log up to
// its first bad entry and drops the rest), so a node compares its
// ledger with its buckets at open, and a key the ledger has and the
// bucket lacks is a loss it reports instead of forgetting in silence.
//
// The file is append-only text, one change a line: "+KEY CRC" or
// "-KEY CRC", CRC the hex CRC-32C of the sign and key. It is written
// after the record is stored and before it is deleted, so that a crash
// between the two leaves the ledger short of the bucket, never ahead.
// A line cut short by a crash (the last, without its newline) is
// dropped; any other bad line makes OpenLedger fail naming it. The file
// is rewritten whole when most of its lines are removals.
type Ledger struct {
	mu    sync.Mutex
	path  string
	f     *os.File
	keys  map[string]bool
	lines int  // lines in the file
	sync  bool // fsync every change (as the store's SyncWrites)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func ledgerLine(sign byte, key string) string {
	c := crc32.Checksum(append([]byte{sign}, key...), castagnoli)
	return fmt.Sprintf("%c%s %08x\n", sign, key, c)
}

// OpenLedger opens the ledger at path, creating it when missing (fresh
// reports that it was).
func OpenLedger(path string, syncWrites bool) (l *Ledger, fresh bool, err error) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fresh = true
	case err != nil:
		return nil, false, err
	}
	l = &Ledger{path: path, keys: map[string]bool{}, sync: syncWrites}
	good := 0 // bytes of whole, valid lines
	for n := 1; len(b) > good; n++ {
		rest := b[good:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break // the last line, cut short: its change never counted
		}
		line := string(rest[:i])
		key, crc, ok := strings.Cut(line, " ")
		want, perr := strconv.ParseUint(crc, 16, 32)
		if !ok || perr != nil || len(key) < 2 || (key[0] != '+' && key[0] != '-') ||
			uint32(want) != crc32.Checksum([]byte(key), castagnoli) {
			return nil, false, fmt.Errorf("damaged file %s: line %d (%q) fails its checksum", path, n, short(line))
		}
		if key[0] == '+' {
			l.keys[key[1:]] = true
		} else {
			delete(l.keys, key[1:])
		}
		l.lines++
		good += i + 1
	}
	if l.f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, false, err
	}
	if err := l.f.Truncate(int64(good)); err != nil {
		l.f.Close()
		return nil, false, err
	}
	if _, err := l.f.Seek(int64(good), 0); err != nil {
		l.f.Close()
		return nil, false, err
	}
	return l, fresh, nil
}

func short(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Keys lists the keys held, sorted.
func (l *Ledger) Keys() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.keys))
	for k := range l.keys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Add records keys as held (those already held are skipped).
func (l *Ledger) Add(keys ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var buf strings.Builder
	for _, k := range keys {
		if !l.keys[k] {
			buf.WriteString(ledgerLine('+', k))
		}
	}
	if buf.Len() == 0 {
		return nil
	}
	if err := l.append(buf.String()); err != nil {
		return err
	}
	for _, k := range keys {
		if !l.keys[k] {
			l.keys[k] = true
			l.lines++
		}
	}
	return nil
}

// Remove records key as no longer held.
func (l *Ledger) Remove(key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.keys[key] {
		return nil
	}
	if err := l.append(ledgerLine('-', key)); err != nil {
		return err
	}
	delete(l.keys, key)
	l.lines++
	if l.lines > 2*len(l.keys)+1024 {
		return l.rewrite()
	}
	return nil
}

func (l *Ledger) append(s string) error {
	if _, err := l.f.WriteString(s); err != nil {
		return fmt.Errorf("ledger %s: %w", l.path, err)
	}
	if l.sync {
		return l.f.Sync()
	}
	return nil
}

// rewrite replaces the file by one line per held key.
func (l *Ledger) rewrite() error {
	tmp, err := os.CreateTemp(filepath.Dir(l.path), ".ledger-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	keys := make([]string, 0, len(l.keys))
	for k := range l.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w.WriteString(ledgerLine('+', k))
	}
	if err := w.Flush(); err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		tmp.Close()
		return err
	}
	if err := os.Rename(tmp.Name(), l.path); err != nil {
		tmp.Close()
		return err
	}
	l.f.Close()
	l.f, l.lines = tmp, len(keys)
	return nil
}

// Close closes the file.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
