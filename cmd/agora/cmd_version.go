package main

import (
	"fmt"
	"io"

	"github.com/agora-sched/agora/node/buildinfo"
)

func init() {
	register("version", "print this build's version, commit, build time and Go version", cmdVersion)
}

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", stdout, stderr)
	asJSON := fs.Bool("json", false, "print the build's identity as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "agora version: unexpected argument %q\n", pos[0])
		return exitBadUsage
	}
	in := buildinfo.Get()
	if *asJSON {
		printJSON(stdout, in)
		return exitOK
	}
	fmt.Fprintln(stdout, in.String())
	return exitOK
}
