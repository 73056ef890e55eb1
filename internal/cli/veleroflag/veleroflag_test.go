package veleroflag

import (
	"reflect"
	"testing"

	"github.com/spf13/pflag"
)

// TestGivenAndFields: only the flags given count; a bare boolean flag is
// true; a nested path is dotted; a bad value names its flag.
func TestGivenAndFields(t *testing.T) {
	flags := []Flag{
		{Name: "move", Path: []string{"snapshotMoveData"}, Value: Bool, Bool: true},
		{Name: "files", Path: []string{"uploaderConfig", "parallelFilesDownload"}, Value: Int},
		{Name: "unused", Path: []string{"unused"}, Value: Text},
	}
	f := pflag.NewFlagSet("create", pflag.ContinueOnError)
	Add(f, flags)
	if err := f.Parse([]string{"--move", "--files", "8"}); err != nil {
		t.Fatal(err)
	}
	if got := Given(f, flags); !reflect.DeepEqual(got, []string{"--move", "--files"}) {
		t.Errorf("Given = %v", got)
	}
	got, err := Fields(f, flags)
	if want := map[string]any{"snapshotMoveData": true, "uploaderConfig.parallelFilesDownload": int64(8)}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Fields = %v (%v), want %v", got, err, want)
	}
	bad := pflag.NewFlagSet("create", pflag.ContinueOnError)
	Add(bad, flags)
	_ = bad.Parse([]string{"--move=maybe"})
	if _, err := Fields(bad, flags); err == nil || err.Error() != `--move="maybe": strconv.ParseBool: parsing "maybe": invalid syntax` {
		t.Errorf("a bad value: %v", err)
	}
}
