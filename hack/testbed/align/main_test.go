package main

import (
	"reflect"
	"testing"
)

// TestCompare: the modules a build shares with its leader at another
// version are what align changes; modules only one side builds, the same
// versions, and those kept at their own are not.
func TestCompare(t *testing.T) {
	mine := map[string]string{
		"k8s.io/client-go": "v0.37.1",
		"golang.org/x/net": "v0.60.0",
		"github.com/container-storage-interface/spec": "v1.13.0",
		"github.com/virtual-kubelet/virtual-kubelet":  "v1.14.1",
		"google.golang.org/grpc":                      "v1.85.0",
	}
	theirs := map[string]string{
		"k8s.io/client-go": "v0.36.3",
		"golang.org/x/net": "v0.49.0",
		"github.com/container-storage-interface/spec": "v1.9.0",
		"google.golang.org/grpc":                      "v1.85.0",
		"k8s.io/kubernetes":                           "v1.36.3",
	}
	got := compare(mine, theirs, own)
	want := []diff{{"golang.org/x/net", "v0.60.0", "v0.49.0"}, {"k8s.io/client-go", "v0.37.1", "v0.36.3"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("compare = %+v, want %+v", got, want)
	}
	if got := compare(theirs, theirs, nil); len(got) != 0 {
		t.Errorf("a module compared with itself differs: %+v", got)
	}
}
