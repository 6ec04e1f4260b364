package executor

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"

	"github.com/agora-sched/agora/runtime"
)

// UserMap runs each task as its owner's local account (agora node
// --task-user map), as Slurm and HTCondor run jobs as the submitting
// user: home directories, shared file systems and their permissions work
// as on a login node. An owner is a certificate user name; without a
// mapping file it is the account's name (looked up through NSS: passwd,
// LDAP, SSSD), with one its line maps it (--task-user-map). An owner
// with no account, or whose account is root, is refused: its tasks are
// not bid for here, and one that arrives anyway fails to start.
type UserMap struct {
	names map[string]string // certificate user → account name; nil: the same
}

// Account is a task owner's local account.
type Account struct {
	Name string
	Home string
	ID   runtime.Identity
}

// maxUserMapBytes bounds a mapping file.
const maxUserMapBytes = 4 << 20

// NewUserMap reads the mapping file at path ("" for none): one mapping
// per line, `CERTIFICATE_USER LOCAL_ACCOUNT`, blank lines and # comments
// ignored. A line of any other shape, or a user mapped twice, is an
// error naming the line.
func NewUserMap(path string) (*UserMap, error) {
	if path == "" {
		return &UserMap{}, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--task-user-map: %w", err)
	}
	if len(b) > maxUserMapBytes {
		return nil, fmt.Errorf("--task-user-map %s: %d bytes, over the %d-byte limit", path, len(b), maxUserMapBytes)
	}
	m := &UserMap{names: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			continue
		case len(f) != 2:
			return nil, fmt.Errorf("--task-user-map %s:%d: want `CERTIFICATE_USER LOCAL_ACCOUNT`, got %q", path, n, strings.TrimSpace(line))
		}
		if _, dup := m.names[f[0]]; dup {
			return nil, fmt.Errorf("--task-user-map %s:%d: user %s mapped twice", path, n, f[0])
		}
		m.names[f[0]] = f[1]
	}
	return m, sc.Err()
}

// Account is owner's local account, or why it has none here.
func (m *UserMap) Account(owner string) (Account, error) {
	if owner == "" {
		return Account{}, fmt.Errorf("the task has no owner (--task-user map needs a network with an authority)")
	}
	name := owner
	if m.names != nil {
		mapped, ok := m.names[owner]
		if !ok {
			return Account{}, fmt.Errorf("no local account for user %s (--task-user map: not in the mapping file)", owner)
		}
		name = mapped
	}
	u, err := user.Lookup(name)
	if err != nil {
		return Account{}, fmt.Errorf("no local account for user %s (--task-user map: %v)", owner, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return Account{}, fmt.Errorf("no usable local account for user %s: %s has IDs %s:%s", owner, name, u.Uid, u.Gid)
	}
	if uid == 0 || gid == 0 {
		return Account{}, fmt.Errorf("user %s maps to %s, a root account: refused (--task-user map)", owner, name)
	}
	a := Account{Name: u.Username, Home: u.HomeDir, ID: runtime.Identity{UID: uint32(uid), GID: uint32(gid), Groups: []uint32{}}}
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil && n != 0 && n != gid {
				a.ID.Groups = append(a.ID.Groups, uint32(n))
			}
		}
	}
	return a, nil
}

// Refusal says why this node runs no task of owner, "" when it runs
// them: what a contractor answers a call for bids with
// (market.Config.LocalUser).
func (m *UserMap) Refusal(owner string) string {
	if _, err := m.Account(owner); err != nil {
		return err.Error()
	}
	return ""
}
