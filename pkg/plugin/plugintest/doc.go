// Package plugintest helps plugin authors test a plugin the way Salvor runs
// it: as a real subprocess, called through Salvor's host with deadlines,
// restarts and error reporting as in production.
//
//	func TestMyAction(t *testing.T) {
//		m := plugintest.Start(t, ".", host.Options{})
//		a, err := host.Get[host.BackupItemAction](context.Background(), m, "example.io/my-action", nil)
//		...
//	}
package plugintest
