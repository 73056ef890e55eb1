// Package plugintest helps plugin authors test a plugin the way Salvor runs
// it: as a real subprocess, called through Salvor's host with deadlines,
// restarts and error reporting as in production.
//
//	func TestMyAction(t *testing.T) {
//		m := plugintest.Start(t, ".", plugintest.Options{})
//		a, err := plugintest.Get[plugintest.BackupItemAction](context.Background(), m, "example.io/my-action", nil)
//		...
//	}
//
// StartInProcess serves an *sdk.Server from the test's own process through
// the same host, without building a binary.
//
// It imports nothing a plugin author cannot: the types a test needs are
// named here (Options, Get, BackupItemAction, RestoreInput, ...).
package plugintest
