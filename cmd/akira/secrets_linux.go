package main

import (
	"fmt"
	"syscall"
)

// prSetDumpable is PR_SET_DUMPABLE from <linux/prctl.h>.
const prSetDumpable = 4

// closeProcToSameUser makes the process non-dumpable: /proc/<pid>/environ, mem and maps become
// root-owned and ptrace is refused, so a process of the same user (an agent run with sandbox: none)
// cannot read the secrets the process was started with. Clearing the variables (see forgetSecrets)
// is not enough on its own: /proc/<pid>/environ shows the environment as it was at exec.
func closeProcToSameUser() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", errno)
	}
	return nil
}
