// Package release holds the test of `make release` (release_test.go):
// the release binaries for linux/amd64 and linux/arm64, their checksums,
// the man pages and the systemd unit. It is a package of its own so that
// its cross builds run beside cmd/agora's tests, not after them.
package release
