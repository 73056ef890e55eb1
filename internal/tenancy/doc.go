// Package tenancy judges what a namespace's own Backups, Restores and
// Schedules may ask for when the server runs with --tenants: a team that
// may make these objects only in its namespace gets the Velero backups
// and restores of that namespace and nothing else, within its location's
// quota (how many of its jobs run at once and in what order, how many
// backups and bytes it keeps). It holds the rules as
// pure functions of the specs, the backup's location and the namespace,
// so that the reconcilers (which read those once) and the tests agree on
// them; checking the requester's own rights (SubjectAccessReview) needs
// the API server and is not here. docs/self-service.md describes the
// model these rules serve.
package tenancy
