package kube

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/salvor-dev/salvor/internal/cli/output"
)

// TestSecretKey: --credential takes one SECRET=KEY; not given is none.
func TestSecretKey(t *testing.T) {
	if sel, err := SecretKey(nil); sel != nil || err != nil {
		t.Errorf("not given: %v %v", sel, err)
	}
	if sel, err := SecretKey(map[string]string{"s3-creds": "cloud"}); err != nil || sel.Name != "s3-creds" || sel.Key != "cloud" {
		t.Errorf("s3-creds=cloud: %+v %v", sel, err)
	}
	for _, bad := range []map[string]string{{"a": "x", "b": "y"}} {
		if _, err := SecretKey(bad); err == nil || !strings.Contains(err.Error(), "--credential: give one SECRET=KEY") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// A Velero create line with its table flags (-L, --show-labels) parses:
// Velero's create commands take them too, and -o json|yaml prints no
// table for them to shape.
func TestPrintFlagTakesVelerosTableFlags(t *testing.T) {
	var format output.Format
	fs := pflag.NewFlagSet("create", pflag.ContinueOnError)
	AddPrintFlag(fs, &format)
	if err := fs.Parse([]string{"-o", "yaml", "--show-labels", "-L", "team,env"}); err != nil || format != "yaml" {
		t.Fatalf("parse: %v, format %q", err, format)
	}
	if fs.Lookup("show-labels").Hidden != true || fs.Lookup("label-columns").Hidden != true {
		t.Error("Velero's table flags show in create's help, where they change nothing")
	}
}
