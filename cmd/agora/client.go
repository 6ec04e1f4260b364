package main

import (
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	nodeapi "github.com/agora-sched/agora/node/api"
)

// defaultAPI is where client commands look for a node when neither --api
// nor $AGORA_API is set.
const defaultAPI = "127.0.0.1:7700"

// apiFlag registers --api on fs.
func apiFlag(fs *flag.FlagSet) *string {
	return fs.String("api", "", "node API host:port (default $AGORA_API, else "+defaultAPI+")")
}

// client talks to one node's HTTP API.
type client struct {
	base  string
	http  *http.Client
	token string // the node's local API token, when this user can read it
}

func newClient(api string) *client {
	if api == "" {
		api = os.Getenv("AGORA_API")
	}
	if api == "" {
		api = defaultAPI
	}
	base := api
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	hostport := strings.TrimRight(base[strings.Index(base, "://")+3:], "/")
	return &client{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: 30 * time.Second}, token: nodeapi.FindToken(hostport)}
}

// apiError is an error answer from the node, with its HTTP status.
type apiError struct {
	Status int
	Msg    string
}

func (e *apiError) Error() string { return e.Msg }

// do sends a request with an optional JSON body and decodes a JSON
// answer into out (when not nil; a *json.RawMessage receives it as is).
func (c *client) do(method, path string, body any, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return err
		}
	}
	return c.send(method, path, "application/json", b, out)
}

// printJSON writes v indented.
func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
