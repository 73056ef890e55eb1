package archive

import (
	"encoding/json"
	"testing"
)

func TestDecodeObjectKeepsNumbers(t *testing.T) {
	for _, tc := range []struct {
		in, out string // out: what encoding it again gives
		typ     string
	}{
		{in: "42", out: "42", typ: "int64"},
		{in: "-3", out: "-3", typ: "int64"},
		{in: "9007199254740993", out: "9007199254740993", typ: "int64"}, // 2^53+1: float64 would make it ...992
		{in: "9223372036854775807", out: "9223372036854775807", typ: "int64"},
		{in: "18446744073709551617", out: "18446744073709551617", typ: "json.Number"}, // 2^64+1
		{in: "1e400", out: "1e400", typ: "json.Number"},
		{in: "0.1", out: "0.1", typ: "float64"},
		{in: "1.5", out: "1.5", typ: "float64"},
		{in: "1.00000000000000000001", out: "1.00000000000000000001", typ: "json.Number"},
	} {
		obj, err := DecodeObject([]byte(`{"kind":"X","spec":{"list":[` + tc.in + `]}}`))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		v := obj["spec"].(map[string]any)["list"].([]any)[0]
		var typ string
		switch v.(type) {
		case int64:
			typ = "int64"
		case float64:
			typ = "float64"
		case json.Number:
			typ = "json.Number"
		}
		out, err := json.Marshal(v)
		if err != nil || string(out) != tc.out || typ != tc.typ {
			t.Errorf("%s: decoded as %s %v, encoded again as %s (%v); want %s %s", tc.in, typ, v, out, err, tc.typ, tc.out)
		}
	}
	for _, bad := range []string{`{"a":1} {"b":2}`, `[1]`, `{"a":`} {
		if _, err := DecodeObject([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}
