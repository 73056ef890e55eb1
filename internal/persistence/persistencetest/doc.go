// Package persistencetest gives tests of what reads and writes backups a
// location on the test's own disk: Salvor's filesystem object store,
// called in the test's process as the host would call it through its
// plugin process.
package persistencetest
