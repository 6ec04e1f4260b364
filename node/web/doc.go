// Package web is the dashboard every node serves under /ui/ on its API
// address: the peers with their resources, the network's jobs with
// their states and reasons, a job's task graph, placement history,
// auction rounds and live logs, and the node's metrics as small charts.
// Pages are rendered on the server (html/template) with a little inline
// script; they only read. The API's guard lets a browser in with a
// session (node/api session.go): /ui/login trades the one-time code of
// `agora dashboard`'s address for an HttpOnly cookie that stands for the
// user who signed in, and the pages show what that user may see.
package web
