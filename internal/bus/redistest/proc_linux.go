package redistest

import "syscall"

// sysProcAttr: a group of its own, so that a signal to the test's group
// is not its; and killed when the test binary dies (killed by its
// timeout), so that it does not outlive it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
