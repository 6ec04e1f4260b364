package main

import (
	"fmt"
	"io"
	"net/url"

	nodeapi "github.com/agora-sched/agora/node/api"
)

func init() {
	register("dashboard", "print a sign-in address for the node's web dashboard", cmdDashboard)
}

// cmdDashboard asks the node for a one-time sign-in code and prints the
// dashboard's address with it in the fragment (which the browser keeps to
// itself): the sign-in page trades it for a session that only reads the
// dashboard. The code is bought with the node's API token, or in a
// network with an authority with the user's credential, signed for this
// node; the browser gets neither.
func cmdDashboard(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("dashboard", stdout, stderr)
	api := apiFlag(fs)
	cred := credentialFlag(fs)
	asJSON := fs.Bool("json", false, `print {"url": ...}`)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "agora dashboard: unexpected argument %q\n", pos[0])
		return exitBadUsage
	}
	if code := loadCredential(*cred, "dashboard", stderr); code != exitOK {
		return code
	}
	c := newClient(*api)
	if c.token == "" && credential == nil {
		fmt.Fprintln(stderr, "agora dashboard: no API token found for this node (not this user's node?) and no --credential (a network with an authority): cannot sign in")
		return exitFailed
	}
	var id nodeapi.IDResponse
	if err := c.do("GET", "/v1/id", nil, &id); err != nil {
		fmt.Fprintf(stderr, "agora dashboard: %v\n", err)
		return exitFailed
	}
	var code nodeapi.CodeResponse
	if err := c.do("POST", "/v1/ui/code/"+url.PathEscape(id.PeerID), nil, &code); err != nil {
		fmt.Fprintf(stderr, "agora dashboard: %v\n", err)
		return exitFailed
	}
	link := fmt.Sprintf("%s/ui/login#code=%s", c.base, code.Code)
	if *asJSON {
		printJSON(stdout, map[string]string{"url": link})
		return exitOK
	}
	fmt.Fprintln(stdout, link)
	return exitOK
}
