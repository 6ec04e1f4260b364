package main

import (
	"fmt"
	"io"
	"net/url"
	"strings"
)

func init() {
	register("dashboard", "print the address of the node's web dashboard", cmdDashboard)
}

// cmdDashboard prints the dashboard's address: with the node's API token
// in the fragment (which the browser keeps to itself) when this user can
// read it, so that the sign-in page can set it as a cookie.
func cmdDashboard(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("dashboard", stderr)
	api := apiFlag(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "agora dashboard: unexpected argument %q\n", pos[0])
		return exitBadUsage
	}
	c := newClient(*api)
	if c.token == "" {
		fmt.Fprintln(stdout, c.base+"/ui/")
		fmt.Fprintln(stderr, "agora dashboard: no API token found for this node (a network with an authority, or not this user's node): the address carries none")
		return exitOK
	}
	fmt.Fprintf(stdout, "%s/ui/login#token=%s\n", strings.TrimRight(c.base, "/"), url.QueryEscape(c.token))
	return exitOK
}
