// Package retention decides which of a schedule's backups to keep: the
// newest N, and the newest of each of the last N hours, days, ISO weeks,
// months and years (grandfather-father-son), plus N failed ones, and always
// the newest Completed one. It is a pure function of the backups' times
// and phases so that it can be tested over synthetic years of runs; the
// schedule reconciler deletes what it does not keep, and the garbage
// collector does not expire by TTL what it keeps.
package retention
