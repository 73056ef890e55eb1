package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
	"github.com/salvor-dev/salvor/pkg/plugin/wire"
)

// decodeItem reads an item sent as JSON; a malformed one is the host's mistake.
func decodeItem(b []byte, what string) (*unstructured.Unstructured, error) {
	if len(b) == 0 {
		return nil, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decoding %s: %v", what, err)
	}
	return u, nil
}

// deepCopier is what the generated API types implement.
type deepCopier[T any] interface {
	*T
	DeepCopy() *T
}

// lastDecoded remembers the last Backup or Restore decoded: a host sends the
// same one with every item of a backup, and copying it is much cheaper than
// decoding it again.
type lastDecoded struct {
	mu  sync.Mutex
	raw []byte
	obj any
}

var decoded = map[string]*lastDecoded{"backup": {}, "restore": {}}

// decodeObject reads a Backup or Restore sent as JSON. Each call gets its
// own copy, so a plugin may change it freely.
func decodeObject[T any, P deepCopier[T]](b []byte, what string) (*T, error) {
	if len(b) == 0 {
		return new(T), nil
	}
	cache := decoded[what]
	if cache != nil {
		cache.mu.Lock()
		if obj, ok := cache.obj.(*T); ok && bytes.Equal(cache.raw, b) {
			cache.mu.Unlock()
			return P(obj).DeepCopy(), nil
		}
		cache.mu.Unlock()
	}
	obj := new(T)
	if err := json.Unmarshal(b, obj); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decoding %s: %v", what, err)
	}
	if cache != nil {
		cache.mu.Lock()
		cache.raw, cache.obj = bytes.Clone(b), P(obj).DeepCopy()
		cache.mu.Unlock()
	}
	return obj, nil
}

// encodeItem writes an updated item; a plugin that returns none keeps the
// item it was given, as Velero's servers do.
func encodeItem(u runtime.Unstructured, given []byte) ([]byte, error) {
	if u == nil {
		return given, nil
	}
	b, err := json.Marshal(u.UnstructuredContent())
	if err != nil {
		return nil, fmt.Errorf("encoding the updated item: %w", err)
	}
	return b, nil
}

// asUnstructured hides a nil *Unstructured behind a nil interface.
func asUnstructured(u *unstructured.Unstructured) runtime.Unstructured {
	if u == nil {
		return nil
	}
	return u
}

type appliesToer interface {
	AppliesTo() (ResourceSelector, error)
}

// selector answers AppliesTo for any action kind.
func selector[T appliesToer](r *registry[T], plugin string) (*pb.ResourceSelector, error) {
	impl, err := r.get(plugin)
	if err != nil {
		return nil, err
	}
	sel, err := impl.AppliesTo()
	if err != nil {
		return nil, err
	}
	return wire.SelectorToProto(sel), nil
}

// call is what every method starts with: the implementation for the
// request's plugin name, and the Backup or Restore the request carries.
func call[O any, T any, P deepCopier[O]](r *registry[T], plugin string, obj []byte, what string) (T, *O, error) {
	impl, err := r.get(plugin)
	if err != nil {
		var zero T
		return zero, nil, err
	}
	o, err := decodeObject[O, P](obj, what)
	return impl, o, err
}

// itemCall is call for methods that also carry an item.
func itemCall[T any](r *registry[T], plugin string, backup, item []byte) (T, *Backup, *unstructured.Unstructured, error) {
	impl, b, err := call[Backup](r, plugin, backup, "backup")
	if err != nil {
		return impl, nil, nil, err
	}
	it, err := decodeItem(item, "item")
	return impl, b, it, err
}
