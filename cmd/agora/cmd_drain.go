package main

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agora-sched/agora/node/api"
)

func init() {
	register("drain", "stop the node taking work and hand its tasks to other nodes, until undrain", cmdDrain)
	register("undrain", "let a drained node take work again", cmdUndrain)
}

func cmdDrain(args []string, stdout, stderr io.Writer) int {
	return drainCmd("drain", "/v1/drain", 30*time.Second, args, stdout, stderr,
		"drained: the node runs no task and takes no new ones, also after a restart, until agora undrain")
}

func cmdUndrain(args []string, stdout, stderr io.Writer) int {
	return drainCmd("undrain", "/v1/undrain", 10*time.Second, args, stdout, stderr,
		"undrained: the node takes work again")
}

// drainCmd is drain and undrain: one POST without arguments, which prints
// the node's state after it.
func drainCmd(name, path string, timeout time.Duration, args []string, stdout, stderr io.Writer, said string) int {
	fs := newFlagSet(name, stdout, stderr)
	apiAddr := apiFlag(fs)
	cred := credentialFlag(fs)
	asJSON := fs.Bool("json", false, "print the node's JSON answer")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if code := loadCredential(*cred, name, stderr); code != exitOK {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "agora %s: unexpected argument %q\n", name, pos[0])
		return exitBadUsage
	}
	c := newClient(*apiAddr)
	c.http = &http.Client{Timeout: timeout}
	var r api.DrainResponse
	if err := c.do("POST", path, nil, &r); err != nil {
		fmt.Fprintf(stderr, "agora %s: %v\n", name, err)
		return exitFailed
	}
	if *asJSON {
		printJSON(stdout, r)
		return exitOK
	}
	fmt.Fprintln(stdout, said)
	return exitOK
}
