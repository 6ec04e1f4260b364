// Package pb holds the protobuf schema of the market's messages and of the
// peer queries (market.proto) and the Go code protoc generates from it
// (committed, so a build needs no protoc; `make proto` regenerates it).
// Package wire converts between these messages and the market's types; no
// other package should need to import this one.
package pb
