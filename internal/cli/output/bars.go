package output

import (
	"io"
	"os"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// TerminalWidth is the width of out when it is a terminal (80 when the
// terminal does not say); ok is false for anything else (a pipe, a file),
// where a wait prints a line per change instead of drawing bars.
func TerminalWidth(out io.Writer) (width int, ok bool) {
	f, isFile := out.(*os.File)
	if !isFile || !term.IsTerminal(int(f.Fd())) {
		return 0, false
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil || width <= 0 {
		width = 80
	}
	return width, true
}

// Bars draws what a `--wait` follows: one bar for a run's items, and one
// per piece of work still going (a plugin operation, a volume's bytes).
// A bar ends on the last figures it was given: work that stopped, or that
// still goes when the wait ends, is not drawn whole.
type Bars struct {
	p     *mpb.Progress
	items *mpb.Bar
	phase string
	subs  map[string]*subBar
	// done and total are the items' last figures.
	done, total int64
}

type subBar struct {
	bar   *mpb.Bar
	state string
}

// Sub is one piece of work a Bars follows, by a key that stays the same
// while it goes.
type Sub struct {
	Key, Label, Units string
	Done, Total       int64
}

// NewBars draws on out, a terminal width columns wide: each line holds
// its text whole, and a bar takes at most 40 columns. name heads the
// items bar; units names what its counters count.
func NewBars(out io.Writer, name, units string, width int) *Bars {
	b := &Bars{p: mpb.New(mpb.WithOutput(out), mpb.WithWidth(width), mpb.WithAutoRefresh()), subs: map[string]*subBar{}}
	b.items = b.p.AddBar(0, mpb.BarWidth(40),
		mpb.PrependDecorators(decor.Name(name+" "), decor.Any(func(decor.Statistics) string { return b.phase })),
		mpb.AppendDecorators(decor.CountersNoUnit(" %d / %d "+units), decor.Percentage(decor.WCSyncSpace)),
	)
	return b
}

// Update sets the phase and the items' figures, and the work going now:
// a bar for each of subs, and the end of those no longer among them.
func (b *Bars) Update(phase string, done, total int64, subs []Sub) {
	b.phase = phase
	b.done, b.total = done, total
	b.items.SetTotal(max(total, done), false)
	b.items.SetCurrent(done)
	seen := map[string]bool{}
	for _, s := range subs {
		seen[s.Key] = true
		sb, ok := b.subs[s.Key]
		if !ok {
			sb = &subBar{}
			sb.bar = b.p.AddBar(0, mpb.BarWidth(40),
				mpb.PrependDecorators(decor.Name(s.Label+" ")),
				mpb.AppendDecorators(decor.CountersNoUnit(" %d / %d "+s.Units), decor.Percentage(decor.WCSyncSpace),
					decor.Any(func(decor.Statistics) string { return sb.state })),
			)
			b.subs[s.Key] = sb
		}
		sb.bar.SetTotal(max(s.Total, s.Done), false)
		sb.bar.SetCurrent(s.Done)
	}
	for key, sb := range b.subs {
		if !seen[key] {
			// It no longer goes; how it ended is the caller's to print.
			sb.state = " ended"
			sb.bar.Abort(false)
			delete(b.subs, key)
		}
	}
}

// Stop ends the drawing: the items bar is whole only if every item was
// done, and work still going stays as it last was.
func (b *Bars) Stop() {
	for _, sb := range b.subs {
		sb.state = " still running"
		sb.bar.Abort(false)
	}
	if b.done >= b.total {
		b.items.SetTotal(-1, true)
	} else {
		b.items.Abort(false)
	}
	b.p.Wait()
}
