//go:build !linux

package devices

import (
	"fmt"
	"runtime"
)

// fsSize is not implemented outside Linux; declare disk in the resources
// file there.
func fsSize(path string) (int64, error) {
	return 0, fmt.Errorf("statfs %s: not supported on %s", path, runtime.GOOS)
}
