package output

import (
	"fmt"
	"io"
	"time"
)

// Pickup tells a waiting user the truth when no server takes an object
// up: a Backup or Restore stays New forever without one (none running, or
// -n naming a namespace no server handles).
type Pickup struct {
	Kind, Name, Namespace string
	// After is how long an object may stay New before the user is told
	// (default 10s).
	After time.Duration

	since time.Time
	said  bool
	now   func() time.Time // time.Now; tests set it
}

// Check prints, once, that no server has picked the object up, when it is
// still new after p.After.
func (p *Pickup) Check(out io.Writer, isNew bool) {
	now := p.now
	if now == nil {
		now = time.Now
	}
	if p.since.IsZero() {
		p.since = now()
	}
	after := p.after()
	if !isNew || p.said || now().Sub(p.since) < after {
		return
	}
	p.said = true
	fmt.Fprintf(out, "No server has picked up %s %s in %s: is `salvor server` running for namespace %s? "+
		"(`salvor version` asks it; -n names Salvor's namespace, not the namespaces to back up or restore.) Still waiting.\n",
		p.Kind, p.Name, after, p.Namespace)
}

// Stopped is the error of a wait the user stopped. An object still New
// then may be taken up a moment later: that no server has it is said only
// once it has waited longer than a server takes.
func (p *Pickup) Stopped(isNew bool, err error) error {
	switch {
	case isNew && p.said:
		return fmt.Errorf("stopped waiting for %s %s: it was still New, no server had picked it up in %s; it starts when one does (`salvor version` says whether one runs): %w", p.Kind, p.Name, p.after(), err)
	case isNew:
		return fmt.Errorf("stopped waiting for %s %s while it was still New: it goes on when the server picks it up (`salvor %s describe %s` follows it): %w", p.Kind, p.Name, p.Kind, p.Name, err)
	}
	return fmt.Errorf("stopped waiting for %s %s (it goes on in the server): %w", p.Kind, p.Name, err)
}

func (p *Pickup) after() time.Duration {
	if p.After <= 0 {
		return 10 * time.Second
	}
	return p.After
}
