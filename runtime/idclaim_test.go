package runtime

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestClaimTaskIDs: nodes on one host get blocks no two share while they
// run; a block given back (or dropped by a dead holder) is taken again;
// a data directory gets back the block it held last.
func TestClaimTaskIDs(t *testing.T) {
	dir := t.TempDir()
	d1, d2, d3 := t.TempDir(), t.TempDir(), t.TempDir()
	a, err := ClaimTaskIDs(dir, d1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ClaimTaskIDs(dir, d2)
	if err != nil {
		t.Fatal(err)
	}
	if a.Block == b.Block || overlap(a.Range, b.Range) {
		t.Fatalf("two live nodes share IDs: %+v and %+v", a, b)
	}
	if a.Range.Count != TaskIDBlock || a.Range.First < HostTaskIDs.First || a.Range.First+a.Range.Count > HostTaskIDs.First+HostTaskIDs.Count {
		t.Fatalf("block %+v outside the host's range %+v", a.Range, HostTaskIDs)
	}
	// d1's node stops; d3's takes its block, d1's restarts elsewhere.
	blockA := a.Block
	a.Close()
	c, err := ClaimTaskIDs(dir, d3)
	if err != nil {
		t.Fatal(err)
	}
	if c.Block != blockA {
		t.Fatalf("the freed block %d was not taken again (got %d)", blockA, c.Block)
	}
	a2, err := ClaimTaskIDs(dir, d1)
	if err != nil {
		t.Fatal(err)
	}
	if a2.Block == c.Block || a2.Block == b.Block {
		t.Fatalf("d1 took block %d, held by a live node", a2.Block)
	}
	// Everyone stops; each data directory gets its own last block back.
	last := map[string]int{d1: a2.Block, d2: b.Block, d3: c.Block}
	a2.Close()
	b.Close()
	c.Close()
	for _, d := range []string{d3, d2, d1} {
		x, err := ClaimTaskIDs(dir, d)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if x.Block != last[d] {
			t.Fatalf("%s got block %d back, want its last, %d", d, x.Block, last[d])
		}
	}
}

// TestClaimSkipsLiveTasks: a free block whose IDs still have a process
// (a crashed node's orphaned task) is not given to another node.
func TestClaimSkipsLiveTasks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process under a task ID")
	}
	dir := t.TempDir()
	first, err := ClaimTaskIDs(dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	// An orphan of that block, under its last ID.
	uid := first.Range.First + first.Range.Count - 1
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	other, err := ClaimTaskIDs(dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if other.Block == first.Block {
		t.Fatalf("block %d given away while a process of ID %d runs", first.Block, uid)
	}
}

func overlap(a, b IDRange) bool {
	return a.First < b.First+b.Count && b.First < a.First+a.Count
}
