package sdk

import (
	"io"
	"log/slog"
	"strings"
)

// NewLogger returns a JSON logger whose lines the host understands: the
// message under "@message", the level under "@level" and the time under
// "@timestamp", as go-plugin hosts (Salvor's and Velero's) expect.
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.MessageKey:
				a.Key = "@message"
			case slog.LevelKey:
				a.Key = "@level"
				a.Value = slog.StringValue(strings.ToLower(a.Value.String()))
			case slog.TimeKey:
				a.Key = "@timestamp"
			}
			return a
		},
	}))
}
