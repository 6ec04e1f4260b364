// Package pb holds the protobuf schema of the resource advert (advert.proto)
// and the Go code protoc generates from it (committed, so a build needs no
// protoc; `make proto` regenerates it). Package gossip converts between it
// and gossip.Advert.
package pb
