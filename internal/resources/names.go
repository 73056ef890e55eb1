package resources

import (
	"fmt"
	"strings"
)

// Unknown returns the names in a spec's resource list field (field names
// it in messages) that mean no resource: not one the cluster serves, not
// one of an API group that is unavailable right now, and not one of
// extra (names the caller knows of otherwise, lower case: for a restore,
// what its backup holds). A misspelt name would otherwise select nothing,
// silently.
func Unknown(field string, names []string, served []Resource, unavailable []Unavailable, extra map[string]bool) []string {
	var problems []string
	for _, n := range names {
		if n == "*" || extra[strings.ToLower(n)] {
			continue
		}
		known := false
		for _, r := range served {
			if r.MatchesAny([]string{n}) {
				known = true
				break
			}
		}
		for _, u := range unavailable {
			known = known || u.Names(n)
		}
		if !known {
			problems = append(problems, fmt.Sprintf("%s: %q is not a resource this cluster serves: check the name (`kubectl api-resources` lists them)", field, n))
		}
	}
	return problems
}

// NotRestored are the resources a restore leaves out unless it names them,
// and on which `salvor install` grants the server no create or patch: they
// belong to the cluster or to controllers (a restored Lease or Endpoints
// would steal another controller's election or traffic; a restored
// VolumeAttachment would have a volume attached to a node, perhaps one of
// another cluster, as Velero too refuses), or are Salvor's and Velero's own
// records of their work in the cluster backed up.
var NotRestored = []string{
	"nodes", "events", "events.events.k8s.io", "componentstatuses", "bindings",
	"leases.coordination.k8s.io", "endpointslices.discovery.k8s.io", "endpoints",
	"csinodes.storage.k8s.io", "volumeattachments.storage.k8s.io",
	"backups.salvor.dev", "restores.salvor.dev", "backupstoragelocations.salvor.dev",
	"downloadrequests.salvor.dev", "serverstatusrequests.salvor.dev",
	"volumepluginbackups.salvor.dev", "volumepluginrestores.salvor.dev",
	"datauploads.salvor.dev", "datadownloads.salvor.dev", "podvolumebackups.salvor.dev", "podvolumerestores.salvor.dev",
	"podvolumebackups.velero.io", "podvolumerestores.velero.io", "datauploads.velero.io", "datadownloads.velero.io",
	"backups.velero.io", "restores.velero.io", "backuprepositories.velero.io", "resticrepositories.velero.io",
}
