//go:build !linux

package redistest

import "syscall"

// sysProcAttr: a group of its own, so that a signal to the test's group
// is not its.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
