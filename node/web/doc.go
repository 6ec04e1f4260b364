// Package web is the dashboard every node serves under /ui/ on its API
// address: the peers with their resources, the network's jobs with
// their states and reasons, a job's task graph, placement history,
// auction rounds and live logs, and the node's metrics as small charts.
// Pages are rendered on the server (html/template) with a little inline
// script; they only read. The API's guard lets a browser in with the
// node's token in a cookie (set by /ui/login from `agora dashboard`'s
// address).
package web
