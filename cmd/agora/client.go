package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
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
	base string
	http *http.Client
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
	return &client{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: 30 * time.Second}}
}

// apiError is an error answer from the node, with its HTTP status.
type apiError struct {
	Status int
	Msg    string
}

func (e *apiError) Error() string { return e.Msg }

// do sends a request and decodes a JSON answer into out (when not nil).
func (c *client) do(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach agora node at %s: %w", strings.TrimPrefix(c.base, "http://"), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return &apiError{Status: resp.StatusCode, Msg: e.Error}
		}
		return &apiError{Status: resp.StatusCode, Msg: fmt.Sprintf("%s %s: %s", method, path, resp.Status)}
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], data...)
		return nil
	}
	return json.Unmarshal(data, out)
}

// printJSON writes v indented.
func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
