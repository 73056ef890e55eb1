//go:build linux

package host

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	goplugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"
)

// exitWatch tells whether a process has exited from a pidfd, which the
// kernel makes readable the moment its process ends (zombie or not): one
// non-blocking poll per call, exact, where reading /proc would take several
// system calls and parsing.
type exitWatch struct {
	fd int // -1: no pidfd (old kernel, other OS); alive falls back to /proc
}

func watchExit(c *goplugin.Client) *exitWatch {
	rc := c.ReattachConfig()
	if rc == nil || rc.Pid <= 0 {
		return &exitWatch{fd: -1}
	}
	fd, err := unix.PidfdOpen(rc.Pid, 0)
	if err != nil {
		return &exitWatch{fd: -1}
	}
	return &exitWatch{fd: fd}
}

func (w *exitWatch) alive(c *goplugin.Client) bool {
	if w == nil || w.fd < 0 {
		return processAlive(c)
	}
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}, 0)
	if err != nil {
		return processAlive(c)
	}
	return n == 0
}

// release closes the pidfd; the watch then falls back to /proc.
func (w *exitWatch) release() {
	if w != nil && w.fd >= 0 {
		_ = unix.Close(w.fd)
		w.fd = -1
	}
}

// processAlive tells whether the process is still running, before go-plugin has
// noticed its death: a plugin killed between two calls is then restarted
// before the next call is sent, instead of failing it. A killed child that
// is not yet reaped is a zombie, which still answers signal 0.
func processAlive(c *goplugin.Client) bool {
	rc := c.ReattachConfig()
	if rc == nil || rc.Pid <= 0 || syscall.Kill(rc.Pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(rc.Pid) + "/stat")
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	// The state follows the command name, which is in parentheses.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		switch stat[i+2] {
		case 'Z', 'X':
			return false
		}
	}
	return true
}
