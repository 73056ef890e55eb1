// Package selfservice runs the Backups, Restores, Schedules and
// DownloadRequests teams make in their own namespaces (salvor server
// --tenants). Each Backup, Restore and DownloadRequest is a request:
// judged by the rules of package tenancy and against the rights of who
// made it (as the API server recorded them, checked by
// SubjectAccessReview), held back while its namespace has its quota's
// jobs running, then carried out as a confined copy in the server's
// namespace — its "mirror", named namespace.name — by the same reconcilers
// and engines as the platform team's own, and the mirror's status copied
// back. A team's Schedule is run where it is by the server's schedule
// reconciler, through hooks that make each run a request in its maker's
// name. The platform team's backups a location shares appear in the
// namespaces they hold as records the server keeps. The engines never see
// a tenant's object, and what a tenant asks for reaches them only as a
// spec already confined to its namespace. The reconcilers here read
// tenants' objects through a cache of their own over every namespace, so
// that the rest of the server still sees its namespace alone.
// docs/self-service.md describes the model.
package selfservice
