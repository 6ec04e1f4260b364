//go:build linux

package devices

import "syscall"

// fsSize is the total size in bytes of the file system holding path.
func fsSize(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	bsize := int64(st.Frsize)
	if bsize <= 0 {
		bsize = int64(st.Bsize)
	}
	return int64(st.Blocks) * bsize, nil
}
