package snapshots

import (
	"testing"

	"github.com/salvor-dev/salvor/internal/testbed"
)

// The tests that need an API server share one, each in namespaces of its
// own (testbed.SharedControlPlane).
func TestMain(m *testing.M) { testbed.Main(m) }
