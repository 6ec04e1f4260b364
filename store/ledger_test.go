package store

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLedger: keys added and removed survive a reopen; a line cut short
// at the end is dropped; a damaged line elsewhere fails the open, naming
// the file and the line; many removals compact the file.
func TestLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.ledger")
	l, fresh, err := OpenLedger(path, false)
	if err != nil || !fresh {
		t.Fatalf("open: %v fresh=%v", err, fresh)
	}
	if err := l.Add("j-1", "j-2", "j-3"); err != nil {
		t.Fatal(err)
	}
	if err := l.Remove("j-2"); err != nil {
		t.Fatal(err)
	}
	l.Close()
	reopen := func() *Ledger {
		t.Helper()
		l, fresh, err := OpenLedger(path, false)
		if err != nil || fresh {
			t.Fatalf("reopen: %v fresh=%v", err, fresh)
		}
		return l
	}
	l = reopen()
	if got := l.Keys(); !slices.Equal(got, []string{"j-1", "j-3"}) {
		t.Fatalf("keys %v", got)
	}
	l.Close()

	// A torn last line (a crash mid-write) is dropped, and then the file
	// takes appends again.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("+j-9 0000")
	f.Close()
	l = reopen()
	if got := l.Keys(); !slices.Equal(got, []string{"j-1", "j-3"}) {
		t.Fatalf("after a torn line: keys %v", got)
	}
	if err := l.Add("j-4"); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = reopen()
	if got := l.Keys(); !slices.Equal(got, []string{"j-1", "j-3", "j-4"}) {
		t.Fatalf("after appending past a torn line: keys %v", got)
	}
	l.Close()

	// A flipped byte in a whole line is damage.
	b, _ := os.ReadFile(path)
	b[1] = 'X'
	os.WriteFile(path, b, 0o600)
	if _, _, err := OpenLedger(path, false); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("damaged ledger opened: %v", err)
	}

	// Compaction keeps the held keys.
	path = filepath.Join(t.TempDir(), "big.ledger")
	l, _, _ = OpenLedger(path, false)
	for i := range 3000 {
		k := fmt.Sprintf("j-%d", i)
		l.Add(k)
		if i%10 != 0 {
			l.Remove(k)
		}
	}
	l.Close()
	b, _ = os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n > 3000 {
		t.Fatalf("%d lines for 300 keys: never compacted", n)
	}
	l = reopen2(t, path)
	if len(l.Keys()) != 300 {
		t.Fatalf("%d keys after compaction, want 300", len(l.Keys()))
	}
}

func reopen2(t *testing.T, path string) *Ledger {
	l, _, err := OpenLedger(path, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
