package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Several nodes may run on one host, each as root with tasks under user
// IDs of their own. A node kills every process of a task's ID when the
// task ends, so two nodes must never hand out the same ID: each claims a
// block of the host's task IDs (HostTaskIDs) for as long as it runs, by
// holding an exclusive flock on the block's file in a host-wide
// directory. The kernel drops the lock when the holder dies, so a
// crashed node's successor can take the block over; a block whose IDs
// still have live processes (another node's orphaned tasks) is passed
// over, except by the data directory that used it last (its own
// orphans, which it re-attaches or reaps).

// HostTaskIDs are the user IDs root nodes on a host share out among
// themselves for their tasks: far above the IDs of a system's accounts,
// below 2^31 for file systems that take signed IDs.
var HostTaskIDs = IDRange{First: 2_000_000_000, Count: 147_418_112}

// TaskIDBlock is how many IDs one node claims: the most tasks it runs at
// once. HostTaskIDs holds HostTaskIDs.Count/TaskIDBlock (2,249) blocks,
// the most root nodes one host runs with task IDs of their own.
const TaskIDBlock = 65536

// DefaultIDClaimDir is where the nodes of a host hold their claims:
// under /run, which a reboot empties along with the processes.
const DefaultIDClaimDir = "/run/agora/task-ids"

// IDClaim is one node's block of task IDs, held until Close.
type IDClaim struct {
	Range IDRange
	Block int
	f     *os.File
}

// Close gives the block back.
func (c *IDClaim) Close() error {
	if c == nil || c.f == nil {
		return nil
	}
	err := c.f.Close() // drops the flock
	c.f = nil
	return err
}

// ClaimTaskIDs claims a block of HostTaskIDs in dir (created if missing)
// for the node whose data directory is dataDir: the block it held last
// when it is free, else the first free one whose IDs no live process
// has. The choice is remembered in dataDir.
func ClaimTaskIDs(dir, dataDir string) (*IDClaim, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("task ID claims: %w", err)
	}
	blocks := int(HostTaskIDs.Count / TaskIDBlock)
	memo := filepath.Join(dataDir, "task-ids")
	prefer := -1
	if b, err := os.ReadFile(memo); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= 0 && n < blocks {
			prefer = n
		}
	}
	var busy map[int]bool // blocks with live processes, read once when needed
	try := func(b int, own bool) (*IDClaim, error) {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("block-%d", b)), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, nil
			}
			return nil, err
		}
		if !own {
			if busy == nil {
				busy = blocksWithProcesses()
			}
			if busy[b] {
				f.Close()
				return nil, nil
			}
		}
		// Who holds it, for an operator reading the directory.
		_ = f.Truncate(0)
		_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d\ndata %s\n", os.Getpid(), dataDir)), 0)
		first := HostTaskIDs.First + uint32(b)*TaskIDBlock
		return &IDClaim{Range: IDRange{First: first, Count: TaskIDBlock}, Block: b, f: f}, nil
	}
	order := make([]int, 0, blocks)
	if prefer >= 0 {
		order = append(order, prefer)
	}
	for b := range blocks {
		if b != prefer {
			order = append(order, b)
		}
	}
	for _, b := range order {
		c, err := try(b, b == prefer)
		if err != nil {
			return nil, fmt.Errorf("task ID claims in %s: %w", dir, err)
		}
		if c != nil {
			if b != prefer {
				if err := os.WriteFile(memo, []byte(strconv.Itoa(b)+"\n"), 0o600); err != nil {
					c.Close()
					return nil, fmt.Errorf("remember the task ID block: %w", err)
				}
			}
			return c, nil
		}
	}
	return nil, fmt.Errorf("all %d blocks of task user IDs in %s are held by running nodes or their tasks", blocks, dir)
}

// blocksWithProcesses is the set of HostTaskIDs blocks that a live
// process's real or effective user ID falls in.
func blocksWithProcesses() map[int]bool {
	busy := map[int]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		_, rest, ok := strings.Cut(string(b), "\nUid:")
		if !ok {
			continue
		}
		line, _, _ := strings.Cut(rest, "\n")
		for _, f := range strings.Fields(line)[:min(2, len(strings.Fields(line)))] {
			id, err := strconv.ParseUint(f, 10, 32)
			if err != nil || uint32(id) < HostTaskIDs.First || uint32(id)-HostTaskIDs.First >= HostTaskIDs.Count {
				continue
			}
			busy[int((uint32(id)-HostTaskIDs.First)/TaskIDBlock)] = true
		}
	}
	return busy
}
