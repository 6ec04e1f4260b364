package main

import (
	"fmt"
	"io"
	"net/http"
	"time"
)

func init() {
	register("drain", "stop the node taking work and hand its tasks to other nodes", cmdDrain)
}

func cmdDrain(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("drain", stderr)
	api := apiFlag(fs)
	cred := credentialFlag(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if code := loadCredential(*cred, "drain", stderr); code != exitOK {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "agora drain: unexpected argument %q\n", pos[0])
		return exitBadUsage
	}
	c := newClient(*api)
	c.http = &http.Client{Timeout: 30 * time.Second}
	if err := c.do("POST", "/v1/drain", nil, nil); err != nil {
		fmt.Fprintf(stderr, "agora drain: %v\n", err)
		return exitFailed
	}
	fmt.Fprintln(stdout, "drained: the node runs no task and takes no new ones; stop it when ready")
	return exitOK
}
