// Package operations follows long-running plugin operations to their end,
// for backups and restores alike.
//
// A Tracker polls each operation's Progress soon after it starts and then
// less and less often, doubling the interval up to a ceiling, so short
// operations end quickly and long ones cost little. Polls run concurrently,
// each under its own deadline, so one slow plugin never holds up the others.
// An operation that outlives its timeout is cancelled through the plugin's
// Cancel and marked Failed "timed out after …"; a plugin that reports an
// error fails its operation; a plugin that cannot be reached (crashed, hung,
// restarting) is asked again at the next poll.
package operations
