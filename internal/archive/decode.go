package archive

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"strconv"
)

// DecodeObject parses an item's JSON without changing its numbers.
//
// encoding/json reads every number as a float64, which alters integers
// above 2^53 (a resourceVersion-like counter, a byte count) and numbers
// beyond float64's range. Here a number becomes an int64 when it is an
// integer that fits, a float64 when that holds its value exactly — the
// types the API server's own decoding gives, so an item compares equal to
// the live object — and otherwise stays a json.Number, which encodes back
// to the very literal it was read from.
func DecodeObject(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the object")
	}
	convertNumbers(obj)
	return obj, nil
}

func convertNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = convertNumbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = convertNumbers(x)
		}
	case json.Number:
		return exactNumber(v)
	}
	return v
}

func exactNumber(n json.Number) any {
	s := string(n)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return n // beyond float64's range
	}
	// A float64 is as good as the literal when what it encodes to (the
	// shortest decimal that reads back as it) has the literal's value.
	literal, _, err1 := big.ParseFloat(s, 10, 4096, big.ToNearestEven)
	again, _, err2 := big.ParseFloat(strconv.FormatFloat(f, 'g', -1, 64), 10, 4096, big.ToNearestEven)
	if err1 != nil || err2 != nil || literal.Cmp(again) != 0 {
		return n
	}
	return f
}
