//go:build !linux

package host

import goplugin "github.com/hashicorp/go-plugin"

// exitWatch has no pidfd outside Linux: the host asks go-plugin, which
// notices a dead plugin when its connection breaks. Only `salvor server` and
// `salvor run-plugins` run plugins for long; elsewhere (the CLI's
// `plugin list` on a laptop) that is soon enough.
type exitWatch struct{}

func watchExit(*goplugin.Client) *exitWatch { return &exitWatch{} }

func (*exitWatch) alive(c *goplugin.Client) bool { return processAlive(c) }

func (*exitWatch) release() {}

func processAlive(c *goplugin.Client) bool { return !c.Exited() }
