//go:build linux

package host

import (
	"errors"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// startTied runs start, which starts cmd, so that the kernel kills the
// plugin process when the server dies, however it dies (SIGKILL, OOM
// kill): a plugin left behind would go on acting on the cluster beside the
// plugins of the next server. Linux's parent-death signal is sent when the
// thread that forked the child exits, not the process, and Go ends a
// thread whose goroutine exits while locked to it; so the fork happens on
// a locked thread that is held until the plugin process has exited.
func startTied(cmd *exec.Cmd, start func() error) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := start()
		started <- err
		if err == nil && cmd.Process != nil {
			awaitExit(cmd.Process.Pid)
		}
		runtime.UnlockOSThread()
	}()
	return <-started
}

// awaitExit blocks until process pid has exited (or cannot be watched).
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already, or no pidfd: the thread is let go
	}
	defer unix.Close(fd)
	for {
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
