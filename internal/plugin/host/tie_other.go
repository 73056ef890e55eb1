//go:build !linux

package host

import "os/exec"

// startTied starts cmd. Only Linux kills a child when its parent dies;
// elsewhere plugins run only under short-lived CLI commands.
func startTied(_ *exec.Cmd, start func() error) error { return start() }
