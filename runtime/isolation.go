package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Isolation confines tasks to their own identity; the zero value confines
// nothing (tasks run as the node's user).
type Isolation struct {
	// IDs, when Count > 0, gives each running task a user and group ID of
	// its own from the range (the node must be root): its work and
	// checkpoint directories are made its own, mode 0700, so no other task
	// reads or writes them, and when it ends every process left with its
	// ID is killed, including those that left its process group (setsid).
	IDs IDRange
	// User, when set and IDs is empty, runs every task as this one user:
	// not the node's, but shared by all tasks.
	User *Identity
	// NoNewPrivs starts every task with no_new_privs set, so that a
	// setuid or file-capability binary cannot raise its rights.
	NoNewPrivs bool
}

// IDRange is a range of user (and group) IDs.
type IDRange struct{ First, Count uint32 }

// Identity is a user and group ID.
type Identity struct {
	UID, GID uint32
	// Groups are its supplementary groups (a mapped local account's,
	// for shared file systems); none when empty.
	Groups []uint32
}

// idPool hands out the IDs of IDRange, one per running task.
type idPool struct {
	mu    sync.Mutex
	r     IDRange
	inUse map[uint32]bool
}

func (p *idPool) take() (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.r.Count {
		id := p.r.First + i
		if !p.inUse[id] {
			p.inUse[id] = true
			return id, nil
		}
	}
	return 0, fmt.Errorf("all %d task user IDs from %d are in use", p.r.Count, p.r.First)
}

// mark takes id if it is the pool's and free (an adopted task's).
func (p *idPool) mark(id uint32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id < p.r.First || id-p.r.First >= p.r.Count || p.inUse[id] {
		return false
	}
	p.inUse[id] = true
	return true
}

func (p *idPool) give(id uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inUse, id)
}

// CheckIsolation says why iso cannot be had on this machine, or returns
// nil: switching users needs root, and the IDs must be usable on the
// file system of dir (a user namespace may map only a few).
func CheckIsolation(iso Isolation, dir string) error {
	if iso.IDs.Count == 0 && iso.User == nil {
		return nil
	}
	if os.Geteuid() != 0 {
		return errors.New("running tasks as other users needs the node to run as root")
	}
	probe := iso.IDs.First
	if iso.IDs.Count == 0 {
		probe = iso.User.UID
	}
	f, err := os.CreateTemp(dir, ".agora-id-probe-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	f.Close()
	if err := os.Chown(f.Name(), int(probe), int(probe)); err != nil {
		return fmt.Errorf("user ID %d is not usable here: %w", probe, err)
	}
	return nil
}

// ownTree makes dir and everything under it belong to id, and dir itself
// its owner's only (0700). Links are changed, not followed.
func ownTree(dir string, id uint32) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(id), int(id))
	})
	if err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// killUser kills every process whose real or effective user ID is uid,
// until none is left (a dying process may have forked once more). It
// returns how many it signalled.
func killUser(uid uint32) int {
	n, _ := killAll(func() []int { return processesOf(uid) })
	return n
}

// killAll kills the processes list names until it names none that runs
// (a dying process may have forked once more), and returns how many it
// signalled and whether list came back empty. A zombie — the task's main
// process awaiting its reaping — is past killing and does not count.
func killAll(list func() []int) (killed int, clean bool) {
	for range 50 {
		found := false
		for _, pid := range list() {
			if zombie(pid) {
				continue
			}
			found = true
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		if !found {
			return killed, true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return killed, false
}

// processesOf lists the processes whose real or effective user ID is uid
// (from /proc; zombies included, which are harmless to signal).
func processesOf(uid uint32) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(strconv.FormatUint(uint64(uid), 10))
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		_, rest, ok := bytes.Cut(b, []byte("\nUid:"))
		if !ok {
			continue
		}
		line, _, _ := bytes.Cut(rest, []byte("\n"))
		f := bytes.Fields(line)
		if len(f) >= 2 && (bytes.Equal(f[0], want) || bytes.Equal(f[1], want)) {
			out = append(out, pid)
		}
	}
	return out
}

// spawner starts processes from one OS thread that set no_new_privs on
// itself: a child inherits it at fork, and Go forks on the calling
// thread. The node's other threads keep their rights.
type spawner struct {
	noNewPrivs bool
	once       sync.Once
	reqs       chan func()
	err        error
}

// prSetNoNewPrivs is prctl's PR_SET_NO_NEW_PRIVS.
const prSetNoNewPrivs = 38

// run runs start on the spawner's thread.
func (s *spawner) run(start func()) error {
	s.once.Do(func() {
		s.reqs = make(chan func())
		ready := make(chan error)
		go func() {
			goruntime.LockOSThread() // never unlocked: the thread dies with the goroutine's end, which never comes
			if s.noNewPrivs {
				if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); e != 0 {
					ready <- fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", e)
					return
				}
			}
			ready <- nil
			for f := range s.reqs {
				f()
			}
		}()
		s.err = <-ready
	})
	if s.err != nil {
		return s.err
	}
	done := make(chan struct{})
	s.reqs <- func() { start(); close(done) }
	<-done
	return nil
}
