package store

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// holderEnv names the data dir a helper process should hold open.
const holderEnv = "AGORA_STORE_TEST_HOLD_DIR"

// TestHelperHoldDir is not a test: run as a child process with holderEnv
// set, it opens the store, reports "ready" and holds it until stdin closes.
func TestHelperHoldDir(t *testing.T) {
	dir := os.Getenv(holderEnv)
	if dir == "" {
		t.Skip("helper process only")
	}
	s, err := Open(dir)
	if err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("ready\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	_ = s.Close()
	os.Exit(0)
}

func TestOpenLockedByAnotherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldDir$")
	cmd.Env = append(os.Environ(), holderEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}

	_, err = Open(dir)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Open of a dir held by another process: err = %v, want ErrLocked", err)
	}

	// After the holder exits, the directory opens.
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper exit: %v", err)
	}
	s := openDisk(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
