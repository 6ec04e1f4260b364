// Package api serves a node's local HTTP API: the node's identity, its
// peers and resources, job submission, status, logs and cancel (for jobs
// managed anywhere in the network), drain, and the Prometheus metrics.
// It owns the request parsing and the JSON documents; what a request does
// is the Backend's (package node implements it), so this package holds no
// node state and must never import package node.
package api
