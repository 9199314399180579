package s3test

import "syscall"

// sysProcAttr kills the server if the test binary dies without stopping it
// (a -timeout panic, say), so no gateway outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
