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
	after := p.After
	if after <= 0 {
		after = 10 * time.Second
	}
	if !isNew || p.said || now().Sub(p.since) < after {
		return
	}
	p.said = true
	fmt.Fprintf(out, "No server has picked up %s %s in %s: is `salvor server` running for namespace %s? "+
		"(`salvor version` asks it; -n names Salvor's namespace, not the namespaces to back up or restore.) Still waiting.\n",
		p.Kind, p.Name, after, p.Namespace)
}

// Stopped is the error of a wait the user stopped: the object goes on in
// the server only if a server has it.
func (p *Pickup) Stopped(isNew bool, err error) error {
	if isNew {
		return fmt.Errorf("stopped waiting for %s %s: it is still New, no server has picked it up: %w", p.Kind, p.Name, err)
	}
	return fmt.Errorf("stopped waiting for %s %s (it goes on in the server): %w", p.Kind, p.Name, err)
}
