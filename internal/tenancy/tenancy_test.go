package tenancy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestScripts runs testdata: what a tenant's Backup, Schedule and Restore
// may ask for, and which backups a tenant sees. A script declares
// namespaces (input: their labels as JSON), locations (input: the spec)
// and backups (input: the spec), then judges specs against them:
//
//	namespace name=team-a
//	location name=shared
//	backup-object name=nightly namespace=salvor location=shared [visible]
//	backup ns=team-a location=shared   (input: a BackupSpec)
//	schedule ns=team-a location=shared (input: a ScheduleSpec)
//	restore ns=team-a backup=nightly   (input: a RestoreSpec)
//	visible ns=team-a backup=nightly
//	turn ns=team-a location=shared running=1 [earlier=a,b]
//	room ns=team-a location=shared kept=3 [bytes=1048576]
//
// The server's namespace is "salvor". Rewrite the outputs with
// go test -run TestScripts -rewrite.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		namespaces := map[string]Namespace{}
		locations := map[string]*salvorv1.BackupStorageLocation{}
		backups := map[string]*salvorv1.Backup{}
		arg := func(d *datadriven.TestData, key string) string {
			var v string
			if d.HasArg(key) {
				d.ScanArgs(t, key, &v)
			}
			return v
		}
		decode := func(d *datadriven.TestData, into any) {
			if strings.TrimSpace(d.Input) == "" {
				return
			}
			if err := json.Unmarshal([]byte(d.Input), into); err != nil {
				d.Fatalf(t, "the input: %v", err)
			}
		}
		ns := func(d *datadriven.TestData) Namespace {
			n, ok := namespaces[arg(d, "ns")]
			if !ok {
				d.Fatalf(t, "no namespace %q declared", arg(d, "ns"))
			}
			return n
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "namespace":
				n := Namespace{Name: arg(d, "name")}
				decode(d, &n.Labels)
				namespaces[n.Name] = n
				return ""
			case "location":
				loc := &salvorv1.BackupStorageLocation{}
				loc.Name = arg(d, "name")
				decode(d, &loc.Spec)
				locations[loc.Name] = loc
				return ""
			case "backup-object":
				b := &salvorv1.Backup{}
				b.Name, b.Namespace = arg(d, "name"), arg(d, "namespace")
				decode(d, &b.Spec)
				b.Spec.StorageLocation = arg(d, "location")
				if d.HasArg("visible") {
					b.Annotations = map[string]string{salvorv1.TenantVisibleAnnotation: "true"}
				}
				backups[b.Name] = b
				return ""
			case "backup":
				var spec salvorv1.BackupSpec
				decode(d, &spec)
				return problems(Backup(ns(d), spec, locations[arg(d, "location")]))
			case "schedule":
				var spec salvorv1.ScheduleSpec
				decode(d, &spec)
				return problems(Schedule(ns(d), spec, locations[arg(d, "location")]))
			case "restore":
				var spec salvorv1.RestoreSpec
				decode(d, &spec)
				b := backups[arg(d, "backup")]
				var loc *salvorv1.BackupStorageLocation
				if b != nil {
					loc = locations[b.Spec.StorageLocation]
				}
				return problems(Restore(ns(d), spec, b, loc, "salvor"))
			case "turn":
				var running int
				d.ScanArgs(t, "running", &running)
				var earlier []string
				if e := arg(d, "earlier"); e != "" {
					earlier = strings.Split(e, ",")
				}
				if why := Turn(ns(d).Name, locations[arg(d, "location")], running, earlier); why != "" {
					return why + "\n"
				}
				return "runs now\n"
			case "room":
				var kept int
				var held int64
				d.ScanArgs(t, "kept", &kept)
				if d.HasArg("bytes") {
					d.ScanArgs(t, "bytes", &held)
				}
				return problems(Room(ns(d).Name, locations[arg(d, "location")], kept, held))
			case "visible":
				b, ok := backups[arg(d, "backup")]
				if !ok {
					d.Fatalf(t, "no backup %q declared", arg(d, "backup"))
				}
				if Visible(b, locations[b.Spec.StorageLocation], ns(d).Name, "salvor") {
					return "visible\n"
				}
				return "hidden\n"
			}
			d.Fatalf(t, "unknown directive %s", d.Cmd)
			return ""
		})
	})
}

// problems is a list of problems as a script's output.
func problems(list []string) string {
	if len(list) == 0 {
		return "ok\n"
	}
	return strings.Join(list, "\n") + "\n"
}

// TestConfine checks that what a tenant run executes is its namespace
// only, with no cluster-scoped item, whatever its spec left unset.
func TestConfine(t *testing.T) {
	yes := true
	b := ConfineBackup("team-a", salvorv1.BackupSpec{IncludeClusterResources: &yes, StorageLocation: "shared"})
	if len(b.IncludedNamespaces) != 1 || b.IncludedNamespaces[0] != "team-a" || b.IncludeClusterResources == nil || *b.IncludeClusterResources || b.StorageLocation != "shared" {
		t.Errorf("confined backup: %+v", b)
	}
	r := ConfineRestore("team-a", salvorv1.RestoreSpec{BackupName: "nightly", NamespaceMapping: map[string]string{"team-a": "team-b"}})
	if len(r.IncludedNamespaces) != 1 || r.IncludedNamespaces[0] != "team-a" || r.NamespaceMapping != nil || r.IncludeClusterResources == nil || *r.IncludeClusterResources || r.BackupName != "nightly" {
		t.Errorf("confined restore: %+v", r)
	}
}
