package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora-sched/agora/testnet/waitfor"
)

// TestE2ETaskUserMap (issue 47, done-when 2): on a root node with
// --task-user map, a user's task runs as the local account of the same
// name — its UID, its HOME — and writes into a directory only that
// account may write; a user without a local account is refused, and
// the job fails at its pending_timeout naming why.
func TestE2ETaskUserMap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("--task-user map needs a root node")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("no useradd on this host to make the local account")
	}
	alice := fmt.Sprintf("agora-a%d", os.Getpid()%100000)
	nobody := fmt.Sprintf("agora-n%d", os.Getpid()%100000)
	home, err := os.MkdirTemp("", "agora-e2e-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	if out, err := exec.Command("useradd", "-M", "-U", "-d", home, "-s", "/bin/sh", alice).CombinedOutput(); err != nil {
		t.Skipf("useradd %s: %v: %s", alice, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("userdel", alice).Run() })
	idOut, err := exec.Command("id", "-u", alice).Output()
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(strings.TrimSpace(string(idOut)))
	// Only alice may write here (0700, hers), and every user may pass
	// through /tmp to it.
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, uid, uid); err != nil {
		t.Fatal(err)
	}

	ca := newCA(t)
	cred := addUsers(t, ca, alice, nobody)
	n := trustedNode(t, ca, "--task-user", "map")

	spec := writeFile(t, "mine.yaml", fmt.Sprintf(`name: mine
tasks:
  - name: t
    command: [sh, -c, 'id -u > %s/proof && echo "$USER $HOME $(id -u)"']
`, home))
	out, errs, code := agora(t, "submit", "--api", n.api, "--credential", cred[alice], "--json", spec)
	if code != 0 {
		t.Fatalf("submit as %s: exit %d: %s", alice, code, errs)
	}
	id := jobID(out)
	var st jobStatus
	waitfor.Every(t, 30*time.Second, apiPoll, "alice's job to end", func() bool {
		st = e2eStatusAs(t, n.api, cred[alice], id)
		return terminal(st.State)
	})
	if st.State != "succeeded" {
		t.Fatalf("alice's job %s: %s %+v", st.State, st.Reason, st.Tasks)
	}
	fi, err := os.Stat(filepath.Join(home, "proof"))
	if err != nil {
		t.Fatalf("the task wrote nothing into alice's directory: %v", err)
	}
	if got := fi.Sys().(*syscall.Stat_t).Uid; int(got) != uid {
		t.Errorf("the file the task wrote belongs to UID %d, alice is %d", got, uid)
	}
	logs, _, _ := agora(t, "logs", "--api", n.api, "--credential", cred[alice], id)
	if want := fmt.Sprintf("%s %s %d", alice, home, uid); strings.TrimSpace(logs) != want {
		t.Errorf("the task saw %q, want %q (USER, HOME, its UID)", strings.TrimSpace(logs), want)
	}

	// No local account: no bid, and the job fails at its pending timeout
	// saying why.
	spec = writeFile(t, "theirs.yaml", "name: theirs\npending_timeout: 5s\ntasks:\n  - {name: t, command: [\"true\"]}\n")
	out, errs, code = agora(t, "submit", "--api", n.api, "--credential", cred[nobody], "--json", spec)
	if code != 0 {
		t.Fatalf("submit as %s: exit %d: %s", nobody, code, errs)
	}
	id = jobID(out)
	waitfor.Every(t, 30*time.Second, apiPoll, "the job of a user without an account to end", func() bool {
		st = e2eStatusAs(t, n.api, cred[nobody], id)
		return terminal(st.State)
	})
	if want := "no local account for user " + nobody; st.State != "failed" || !strings.Contains(st.Reason, want) {
		t.Fatalf("job %s (%q), want failed naming %q", st.State, st.Reason, want)
	}
}
