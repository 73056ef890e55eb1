// Package restore is Salvor's restore engine: it brings a backup's items
// back into a cluster.
//
// # Safe reading
//
// The tarball is untrusted: it is read and checked whole (package archive)
// and its items spooled to local files, one per priority tier, before
// anything is created. A tarball that fails any check creates nothing.
//
// # Memory
//
// A restore's memory does not grow with the number of items: the spool
// also holds, on disk, a hash table from each item's key to its place and
// whether it was restored, which is how an item a plugin asks for by name
// is found and restored once. Memory holds one record per resource kind and
// per namespace, and the items in flight.
//
// # Order and speed
//
// Items are restored tier by tier — custom resource definitions first (and
// waited on until established), then namespaces, storage classes, volumes
// and claims, secrets and config maps, service accounts, ..., then
// everything else — and inside a tier by a bounded pool of workers, one API
// call per item where possible.
//
// # Plugins
//
// RestoreItemActions (v1 through the adapter, v2) run on each item: they may
// change it, skip it, name additional items to restore first and ask to wait
// until those are ready, and start long-running operations. A wait never
// stalls the other workers, and a wait that times out or fails is an error
// in the results while the item is still restored. An item asked for while
// another worker restores it is waited for, unless that worker is itself
// waiting on the asker (a cycle of additional items), which would never end.
//
// # Hooks
//
// Velero's restore hooks: init containers put into the pods a restore
// makes (hooks.go), and commands run in them once their containers are up
// (exechooks.go, through package hooks): each pod's wait runs beside the
// restore, which ends when every one has.
//
// # Volume data
//
// A persistent volume with a snapshot is made from it (Volumes.Restorer);
// a claim or pod whose data the backup keeps where Salvor cannot restore it
// from (Velero's file-system backup, another data mover: Volumes.Elsewhere)
// is an error of the restore when made, never a silently empty volume. A
// claim whose data Velero's own data mover moved (Volumes.VeleroMoved) is
// marked with its operation for the CSI action, which restores it from
// Velero's kopia repository.
//
// # Files
//
// One job each: engine.go runs a restore tier by tier; validate.go checks a
// spec; prepare.go reads once what the spec points to (modifiers,
// policies, mappings); selection.go decides what the restore takes of each
// item and where it goes, from the spec and what the cluster serves alone
// (testdata/select); plan.go reads and spools the backup, recording those
// verdicts and what restored items need, and discovers the cluster
// (through package resources, shared with backups); pipeline.go is the item pipeline —
// claims, plugins, additional items, readiness waits, operations;
// create.go writes to the API server (create, or compare and update what
// exists); status.go gives an item just made its backed-up status where
// the restore's restoreStatus or the item's annotation asks; clean.go
// makes a backed-up object creatable; adjust.go changes what an item says
// of the cluster and namespace it was backed up from
// (Velero's built-in restore actions: role binding subjects, Job selectors,
// a Pod's node, a legacy CRD's preserveUnknownFields, a legacy webhook's
// side effects) and leaves out finished Jobs and Pods and what the cluster
// makes itself (automanaged APIServices); mappings.go reads the ConfigMaps
// that map storage classes (storageclass.go, Velero's change-storage-class)
// and images (images.go, Velero's change-image-name); volumes.go brings a
// pod's claims and a claim's volume with it, restores a volume beside its
// original, leaves out one provisioned anew and warns of a claim that
// cannot bind; spool.go and tiers.go are the on-disk index and the order
// of resources.
package restore
