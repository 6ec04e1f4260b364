package devices

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// diskCapacity is the total size of the file system holding path, and the
// path actually measured. Nothing is created: when path does not exist
// yet, its nearest existing ancestor is measured, since that is where the
// directory will be made. An empty path means os.TempDir().
func diskCapacity(path string) (size int64, measured string, err error) {
	if path == "" {
		path = os.TempDir()
	}
	p, err := filepath.Abs(path)
	if err != nil {
		return 0, path, fmt.Errorf("disk %s: %w", path, err)
	}
	for {
		size, err = fsSize(p)
		if err == nil {
			return size, p, nil
		}
		parent := filepath.Dir(p)
		if !errors.Is(err, fs.ErrNotExist) || parent == p {
			return 0, p, fmt.Errorf("disk %s: %w", p, err)
		}
		p = parent
	}
}
