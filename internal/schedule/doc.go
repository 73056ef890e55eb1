// Package schedule decides when a Schedule runs: it parses spec.schedule
// (cron, macros, @every, an optional CRON_TZ zone) and, from the last run
// handled and the time now, says which run is due, how many were missed,
// whether a missed one is past its starting deadline, and when the next
// one is. It is pure: the reconciler brings the clock and the objects.
package schedule
