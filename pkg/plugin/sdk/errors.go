package sdk

import (
	"fmt"

	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

// WithStack records the caller's stack trace on err, so that the host shows
// where in the plugin the error came from.
func WithStack(err error) error {
	if err == nil {
		return nil
	}
	return wire.WithStackSkip(err, 1)
}

// Errorf is fmt.Errorf with the caller's stack trace recorded.
func Errorf(format string, args ...any) error {
	return wire.WithStackSkip(fmt.Errorf(format, args...), 1)
}
