package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/persistence"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// maxFailures bounds the failures a report keeps.
const maxFailures = 50

// Report is what checking a stored backup found.
type Report struct {
	// Authentication is what checking the manifest's signature found.
	Authentication persistence.Authentication
	// Manifest tells whether the backup had one to check against.
	Manifest bool
	Objects  []salvorv1.VerifiedObject
	// Items counts the tarball's items read whole (each once, not per
	// version copy).
	Items    int
	Failures []string
	// Volumes are the volumes whose data the backup keeps outside its
	// objects, found in its tarball and volume snapshots file; the caller
	// checks each (the data is in the cluster or a repository, not among
	// the objects) and records what it found in VolumeResults.
	Volumes       []Volume
	VolumeResults []salvorv1.VerifiedVolume
	// Checked says, in words, what was checked.
	Checked string
	// dropped counts failures beyond maxFailures.
	dropped int
}

// Passed tells whether nothing failed.
func (r *Report) Passed() bool { return len(r.Failures) == 0 }

func (r *Report) fail(format string, args ...any) {
	if len(r.Failures) >= maxFailures {
		r.dropped++
		return
	}
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

func (r *Report) object(name, result, detail string) {
	r.Objects = append(r.Objects, salvorv1.VerifiedObject{Name: name, Result: result, Detail: detail})
	switch result {
	case salvorv1.ObjectMissing, salvorv1.ObjectChanged:
		r.fail("%s: %s%s", name, result, prefixed(detail))
	}
}

func prefixed(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// Finish closes the report: a note of failures left out.
func (r *Report) Finish() {
	if r.dropped > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("... and %d more failures", r.dropped))
		r.dropped = 0
	}
}

// Check verifies the backup name stored in store; uid, when known, is the
// UID its signed manifest must name. An error is returned only when the
// location could not be read at all (to try again later); everything the
// backup's objects show is in the report, and what authenticating its
// manifest found (whether that fails the backup is the caller's to say).
func Check(ctx context.Context, store *persistence.BackupStore, name, uid string) (*Report, error) {
	r := &Report{}
	stored, err := store.BackupObjects(ctx, name)
	if err != nil {
		return nil, err
	}
	m, hasManifest, err := store.GetManifest(ctx, name)
	manifestName := name + persistence.ManifestFile.Suffix()
	if err != nil {
		if !hasManifest {
			return nil, err
		}
		r.Authentication = persistence.Authentication{State: persistence.Forged, Message: manifestName + " is unreadable: " + err.Error()}
		r.Manifest = true
		r.object(manifestName, salvorv1.ObjectChanged, "unreadable: "+err.Error())
		r.Finish()
		return r, nil
	}
	r.Manifest = hasManifest
	r.Authentication = store.AuthenticateManifest(m, hasManifest, name, uid)
	if hasManifest {
		checkAgainstManifest(ctx, store, name, m, stored, r)
		r.Checked = "every object against the backup's manifest (SHA-256 and size), every item of the tarball against it, the tarball read whole under the restore's checks, and its items against the resource list"
	} else {
		checkWithoutManifest(ctx, store, name, stored, r)
		r.Checked = "the backup has no manifest (written by Velero, or by a Salvor before manifests): its objects were read and parsed, the tarball read whole under the restore's checks, and its items compared with the resource list; no checksum could be checked"
	}
	if snaps, err := pluginSnapshots(ctx, store, name); err != nil {
		r.fail("%s: the volume snapshots could not be read: %v", name+persistence.VolumeSnapshotsFile.Suffix(), err)
	} else {
		r.Volumes = append(r.Volumes, snaps...)
	}
	r.Finish()
	return r, nil
}

func checkAgainstManifest(ctx context.Context, store *persistence.BackupStore, name string, m *persistence.Manifest, stored []string, r *Report) {
	tarball := name + persistence.TarballFile.Suffix()
	listed := map[string]bool{name + persistence.ManifestFile.Suffix(): true}
	for _, want := range m.Objects {
		listed[want.Name] = true
		if !slices.Contains(stored, want.Name) {
			r.object(want.Name, salvorv1.ObjectMissing, "")
			continue
		}
		if want.Name == tarball {
			checkTarball(ctx, store, name, stored, &want, m.Items, r)
			continue
		}
		got, err := digest(ctx, store, name, want.Name)
		switch {
		case err != nil:
			r.object(want.Name, salvorv1.ObjectChanged, "unreadable: "+err.Error())
		case got != want:
			r.object(want.Name, salvorv1.ObjectChanged, differs(got, want))
		default:
			r.object(want.Name, salvorv1.ObjectOK, "")
		}
	}
	for _, s := range stored {
		if !listed[s] {
			r.object(s, salvorv1.ObjectExtra, "stored under the backup's name but not in its manifest; not read by a restore")
		}
	}
	sort.Slice(r.Objects, func(i, j int) bool { return r.Objects[i].Name < r.Objects[j].Name })
}

func differs(got, want persistence.ObjectDigest) string {
	if got.Size != want.Size {
		return fmt.Sprintf("%d bytes, the manifest says %d", got.Size, want.Size)
	}
	return "its SHA-256 is " + got.SHA256 + ", the manifest says " + want.SHA256
}

func digest(ctx context.Context, store *persistence.BackupStore, name, object string) (persistence.ObjectDigest, error) {
	rc, err := store.OpenBackupObject(ctx, name, object)
	if err != nil {
		return persistence.ObjectDigest{}, err
	}
	defer rc.Close()
	return persistence.DigestObject(object, rc)
}

// checkTarball reads the tarball once: its digest, each item's digest
// against the manifest's (when there is one), and every entry through
// archive.Read — the restore's own reader and checks — and the items
// against the resource list.
func checkTarball(ctx context.Context, store *persistence.BackupStore, name string, stored []string, want *persistence.ObjectDigest, items []persistence.ItemDigest, r *Report) {
	object := name + persistence.TarballFile.Suffix()
	// A backup written before resource lists existed has none to compare.
	var list map[string][]string
	var listErr error
	hasList := slices.Contains(stored, name+persistence.ResourceListFile.Suffix())
	if hasList {
		list, listErr = store.GetResourceList(ctx, name)
	}
	rc, err := store.OpenBackupObject(ctx, name, object)
	if err != nil {
		r.object(object, salvorv1.ObjectChanged, "unreadable: "+err.Error())
		return
	}
	defer rc.Close()
	whole := persistence.NewDigester()
	expected := map[string]string{}
	for _, it := range items {
		expected[it.Path] = it.SHA256
	}
	seen := map[string]bool{}
	inList := listed(list)
	var itemProblems []string
	addProblem := func(format string, args ...any) {
		if len(itemProblems) < maxFailures {
			itemProblems = append(itemProblems, fmt.Sprintf(format, args...))
		}
	}
	entries := 0
	_, readErr := archive.Read(io.TeeReader(rc, whole), func(e archive.Entry) error {
		entries++
		if e.Version == "" {
			r.Items++ // its other copies are the same item at a version
			if v, ok := volumeOf(e); ok {
				r.Volumes = append(r.Volumes, v)
			}
		}
		seen[e.Path] = true
		if why := e.Misfiled(); why != "" {
			addProblem("%s: a restore refuses it", why)
		}
		if want != nil {
			h := sha256.Sum256(e.Raw)
			switch sum, ok := expected[e.Path]; {
			case !ok:
				addProblem("item %s is not in the manifest", e.Path)
			case sum != hex.EncodeToString(h[:]):
				addProblem("item %s differs from the manifest", e.Path)
			}
		}
		if e.Version == "" && inList != nil {
			key := e.Object.GetAPIVersion() + "/" + e.Object.GetKind()
			entry := e.Object.GetName()
			if e.Namespace != "" {
				entry = e.Namespace + "/" + entry
			}
			if !inList[key+"\x00"+entry] {
				addProblem("item %s (%s %s) is not in the resource list", e.Path, key, entry)
			}
			delete(inList, key+"\x00"+entry)
		}
		return nil
	})
	if readErr == nil {
		// Read the rest (gzip padding), so the digest covers it.
		_, readErr = io.Copy(whole, rc)
	}
	if want != nil {
		for _, it := range items {
			if !seen[it.Path] {
				addProblem("item %s is in the manifest but not in the tarball", it.Path)
			}
		}
	}
	if listErr == nil {
		for k := range inList {
			key, entry, _ := strings.Cut(k, "\x00")
			addProblem("the resource list names %s %s, which the tarball does not hold", key, entry)
		}
	} else {
		addProblem("the resource list could not be read: %v", listErr)
	}
	sort.Strings(itemProblems)
	switch {
	case readErr != nil:
		r.object(object, salvorv1.ObjectChanged, "does not read whole: "+readErr.Error())
	case want != nil && whole.Digest(object) != *want:
		detail := differs(whole.Digest(object), *want)
		if len(itemProblems) > 0 {
			detail += "; " + itemProblems[0]
			if len(itemProblems) > 1 {
				detail += fmt.Sprintf(" (and %d more)", len(itemProblems)-1)
			}
		}
		r.object(object, salvorv1.ObjectChanged, detail)
	case want == nil:
		r.object(object, salvorv1.ObjectUnchecked, fmt.Sprintf("read whole: %d items (%d entries)", r.Items, entries))
	default:
		r.object(object, salvorv1.ObjectOK, fmt.Sprintf("%d items (%d entries)", r.Items, entries))
	}
	for _, p := range itemProblems {
		r.fail("%s: %s", object, p)
	}
}

// listed is the resource list as a set of "<apiVersion>/<Kind>\x00<entry>".
func listed(list map[string][]string) map[string]bool {
	if list == nil {
		return nil
	}
	out := map[string]bool{}
	for k, entries := range list {
		for _, e := range entries {
			out[k+"\x00"+e] = true
		}
	}
	return out
}

// checkWithoutManifest reads what a backup without a manifest holds: the
// tarball whole, and each JSON file parsed.
func checkWithoutManifest(ctx context.Context, store *persistence.BackupStore, name string, stored []string, r *Report) {
	if _, err := store.GetBackup(ctx, name); err != nil {
		r.object(persistence.MetadataFile, salvorv1.ObjectChanged, "unreadable: "+err.Error())
	}
	tarball := name + persistence.TarballFile.Suffix()
	if !slices.Contains(stored, tarball) {
		r.object(tarball, salvorv1.ObjectMissing, "")
	}
	for _, s := range stored {
		if s == tarball {
			checkTarball(ctx, store, name, stored, nil, nil, r)
			continue
		}
		if err := parse(ctx, store, name, s); err != nil {
			r.object(s, salvorv1.ObjectChanged, err.Error())
			continue
		}
		r.object(s, salvorv1.ObjectUnchecked, "read and parsed")
	}
	sort.Slice(r.Objects, func(i, j int) bool { return r.Objects[i].Name < r.Objects[j].Name })
}

// parse reads one object of a backup as its layout says it is written.
func parse(ctx context.Context, store *persistence.BackupStore, name, object string) error {
	switch object {
	case persistence.MetadataFile, persistence.SalvorMetadataFile:
		return nil // read by GetBackup
	case name + persistence.ResultsFile.Suffix():
		_, err := store.GetResults(ctx, name)
		return err
	case name + persistence.ResourceListFile.Suffix():
		_, err := store.GetResourceList(ctx, name)
		return err
	case name + persistence.LogFile.Suffix():
		rc, err := store.GetLogs(ctx, name)
		if err != nil {
			return err
		}
		defer rc.Close()
		return persistence.ReadGzip(rc)
	}
	for _, f := range []persistence.File{persistence.ItemOperationsFile, persistence.VolumeSnapshotsFile, persistence.VolumePluginBackupsFile} {
		if object == name+f.Suffix() {
			var v any
			return store.GetBackupJSON(ctx, name, f, &v)
		}
	}
	// Files Salvor does not know (another tool's) are only read.
	rc, err := store.OpenBackupObject(ctx, name, object)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}
