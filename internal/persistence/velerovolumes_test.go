package persistence

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"maps"
	"testing"
)

// TestVeleroVolumes reads Velero's records of a backup's volume data: only
// data kept by its file-system backup or moved by a data mover other than
// Velero's own with kopia is out of Salvor's reach; skipped and failed
// volumes, snapshots left in place and native snapshots are not. Data
// Velero's built-in mover moved whole is found by its operation ID; an ID
// Velero would not make is not used. The records stay when a run's files
// are removed: a run never writes them.
func TestVeleroVolumes(t *testing.T) {
	ctx := context.Background()
	const volumeInfo = `[
 {"pvcName":"moved","pvcNamespace":"a","backupMethod":"CSISnapshot","snapshotDataMoved":true,"result":"succeeded","snapshotDataMovementInfo":{"dataMover":"acme"}},
 {"pvcName":"by-velero","pvcNamespace":"a","backupMethod":"CSISnapshot","snapshotDataMoved":true,"result":"succeeded","snapshotDataMovementInfo":{"dataMover":"velero","uploaderType":"kopia","operationID":"du-1f.2e","Phase":"Completed"}},
 {"pvcName":"default-mover","pvcNamespace":"a","backupMethod":"CSISnapshot","snapshotDataMoved":true,"result":"succeeded","snapshotDataMovementInfo":{"uploaderType":"kopia","operationID":"du-3c.4d"}},
 {"pvcName":"upload-failed","pvcNamespace":"a","backupMethod":"CSISnapshot","snapshotDataMoved":true,"result":"succeeded","snapshotDataMovementInfo":{"dataMover":"velero","uploaderType":"kopia","operationID":"du-5.6","Phase":"Failed"}},
 {"pvcName":"forged-id","pvcNamespace":"a","backupMethod":"CSISnapshot","snapshotDataMoved":true,"result":"succeeded","snapshotDataMovementInfo":{"dataMover":"velero","uploaderType":"kopia","operationID":"../../x","Phase":"Completed"}},
 {"pvcName":"no-id","pvcNamespace":"a","backupMethod":"CSISnapshot","snapshotDataMoved":true,"result":"succeeded","snapshotDataMovementInfo":{"dataMover":"velero","uploaderType":"kopia"}},
 {"pvcName":"restic","pvcNamespace":"a","backupMethod":"CSISnapshot","snapshotDataMoved":true,"result":"succeeded","snapshotDataMovementInfo":{"dataMover":"velero","uploaderType":"restic","operationID":"du-7.8"}},
 {"pvcName":"inplace","pvcNamespace":"a","backupMethod":"CSISnapshot","snapshotDataMoved":false,"result":"succeeded"},
 {"pvcName":"native","pvcNamespace":"a","backupMethod":"NativeSnapshot","result":"succeeded"},
 {"pvcName":"skipped","pvcNamespace":"a","skipped":true,"skippedReason":"no snapshot"},
 {"pvcName":"failed","pvcNamespace":"a","backupMethod":"PodVolumeBackup","result":"failed","pvbInfo":{"podName":"p","podNamespace":"a","volumeName":"v"}},
 {"pvcName":"claim","pvcNamespace":"a","backupMethod":"PodVolumeBackup","result":"succeeded","pvbInfo":{"podName":"p","podNamespace":"a","volumeName":"data","uploaderType":"kopia"}},
 {"backupMethod":"PodVolumeBackup","result":"succeeded","pvbInfo":{"podName":"p","podNamespace":"a","volumeName":"scratch","uploaderType":"kopia"}},
 {"pvcName":"pg","pvcNamespace":"a","backupMethod":"PodVolumeBackup","result":"succeeded","pvbInfo":{"podName":"db","podNamespace":"a","volumeName":"data","uploaderType":"kopia","snapshotHandle":"k0f3a"}},
 {"backupMethod":"PodVolumeBackup","result":"succeeded","pvbInfo":{"podName":"db","podNamespace":"a","volumeName":"cache","uploaderType":"kopia","snapshotHandle":"9e21"}},
 {"backupMethod":"PodVolumeBackup","result":"succeeded","pvbInfo":{"podName":"db","podNamespace":"a","volumeName":"forged","uploaderType":"kopia","snapshotHandle":"../k1"}},
 {"backupMethod":"PodVolumeBackup","result":"succeeded","pvbInfo":{"podName":"old","podNamespace":"a","volumeName":"cache","uploaderType":"restic","snapshotHandle":"ab12"}}
]`
	const podVolumeBackups = `[
 {"spec":{"pod":{"namespace":"b","name":"q"},"volume":"data"},"status":{"phase":"Completed"}},
 {"spec":{"pod":{"namespace":"b","name":"r"},"volume":"data"},"status":{"phase":"Failed"}},
 {"metadata":{"annotations":{"velero.io/pvc-name":"pg"}},"spec":{"pod":{"namespace":"b","name":"db"},"volume":"data","uploaderType":"kopia"},"status":{"phase":"Completed","snapshotID":"7cd0"}}
]`
	for _, tc := range []struct {
		name  string
		files map[File]string
		want  map[string]string
		moved map[string]string
		fs    string
	}{
		{"salvor", nil, map[string]string{}, map[string]string{}, "map[]"},
		{"volumeinfo", map[File]string{VolumeInfoFile: volumeInfo, PodVolumeBackupsFile: podVolumeBackups}, map[string]string{
			"persistentvolumeclaims/a/moved":         `in Velero's backup repository, moved there by data mover "acme"`,
			"persistentvolumeclaims/a/upload-failed": `nowhere whole: Velero's data upload of it ended "Failed"`,
			"persistentvolumeclaims/a/forged-id":     `in Velero's backup repository, under an operation ID Velero does not make ("../../x")`,
			"persistentvolumeclaims/a/restic":        `in Velero's backup repository, moved there by its data mover with uploader "restic"`,
			"persistentvolumeclaims/a/no-id":         `in Velero's backup repository, moved there by data mover "velero", under no operation ID to find it by`,
			"persistentvolumeclaims/a/claim":         `in Velero's file-system backup ("kopia", volume "data" of pod a/p)`,
			"pods/a/p":                               `in Velero's file-system backup ("kopia", volume "scratch" of pod a/p)`,
			"pods/a/db":                              `in Velero's file-system backup ("kopia", volume "forged" of pod a/db)`,
			"pods/a/old":                             `in Velero's file-system backup ("restic", volume "cache" of pod a/old)`,
		}, map[string]string{"a/by-velero": "du-1f.2e", "a/default-mover": "du-3c.4d"},
			"map[a/db:[{data pg k0f3a} {cache cache 9e21}]]"},
		{"podvolumebackups", map[File]string{PodVolumeBackupsFile: podVolumeBackups}, map[string]string{
			"pods/b/q": `in Velero's file-system backup (restic, volume "data" of pod b/q)`,
		}, map[string]string{}, "map[b/db:[{data pg 7cd0}]]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, fs := newStore(t, "")
			for f, body := range tc.files {
				var buf bytes.Buffer
				zw := gzip.NewWriter(&buf)
				zw.Write([]byte(body))
				zw.Close()
				if err := fs.PutObject(ctx, "bkt", s.BackupFile(tc.name, f), &buf); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.VeleroVolumes(ctx, tc.name)
			if err != nil || !maps.Equal(got.Elsewhere, tc.want) || !maps.Equal(got.Moved, tc.moved) || fmt.Sprint(got.FS) != tc.fs {
				t.Errorf("VeleroVolumes = %v, %v; want elsewhere %v, moved %v, fs %s", got, err, tc.want, tc.moved, tc.fs)
			}
			if err := s.ClaimName(ctx, tc.name, "uid"); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteRunFiles(ctx, tc.name, "uid"); err != nil {
				t.Fatal(err)
			}
			if keys, _ := fs.ListObjectsWithContext(ctx, "bkt", "backups/"+tc.name+"/"); len(keys) != len(tc.files) {
				t.Errorf("after removing a run's files: %v; Velero's records must stay", keys)
			}
		})
	}
	s, fs := newStore(t, "")
	if err := fs.PutObject(ctx, "bkt", s.BackupFile("bad", VolumeInfoFile), bytes.NewReader([]byte("not gzip"))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.VeleroVolumes(ctx, "bad"); err == nil {
		t.Error("an unreadable volume info file read as none")
	}
}
