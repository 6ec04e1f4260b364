package runtime

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// pPID is waitid's P_PID id type.
const pPID = 1

// waitExited blocks until the child pid has exited without reaping it, so
// that its process group id cannot be reused while the caller cleans up the
// group.
func waitExited(pid int) error {
	var info [16]uint64 // siginfo_t, 128 bytes
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return fmt.Errorf("runtime: waitid %d: %w", pid, errno)
		}
	}
}

// signalGroup sends sig to every process in the process group pgid. A group
// that no longer exists is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		// kill(0) or kill(-1) would hit the node itself or everything.
		return fmt.Errorf("runtime: refusing to signal process group %d", pgid)
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("runtime: signal group %d with %s: %w", pgid, sig, err)
	}
	return nil
}
