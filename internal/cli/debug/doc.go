// Package debug holds `salvor debug` (Velero's command): a bundle of what
// someone helping with a failed backup or restore asks for first — the
// versions, Salvor's objects, the server's Deployment, pods, events and
// logs, and a named backup's or restore's description and log — in one
// tar.gz, with no Secret in it. Each part is collected by running the CLI's
// own commands, so the bundle says what the user would see.
package debug
