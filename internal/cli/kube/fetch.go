package kube

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/salvor-dev/salvor/internal/cli/output"
)

// Object is a pointer to a Kubernetes object type T.
type Object[T any] interface {
	*T
	client.Object
}

// Fetch returns the named objects of a kind in namespace, or every one
// there when no name is given, with their apiVersion and kind set (the
// client clears them), so that `-o yaml` output applies as it is. An
// error names the kind and the object. opts narrow the list (a label
// selector) when no name is given.
func Fetch[T any, P Object[T]](ctx context.Context, c client.Client, namespace, kind string, names []string, list client.ObjectList, opts ...client.ListOption) ([]T, error) {
	if len(names) == 0 {
		if err := c.List(ctx, list, append([]client.ListOption{client.InNamespace(namespace)}, opts...)...); err != nil {
			return nil, fmt.Errorf("listing %ss in namespace %s: %w", kind, namespace, err)
		}
		objs, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		out := make([]T, 0, len(objs))
		for _, o := range objs {
			if err := typed(c, o.(P)); err != nil {
				return nil, err
			}
			out = append(out, *o.(P))
		}
		return out, nil
	}
	out := make([]T, 0, len(names))
	err := Each[T, P](ctx, c, namespace, kind, names, func(o P) error {
		if err := typed(c, o); err != nil {
			return err
		}
		out = append(out, *o)
		return nil
	})
	return out, err
}

// typed sets an object's apiVersion and kind from the client's scheme.
func typed(c client.Client, o client.Object) error {
	gvk, err := apiutil.GVKForObject(o, c.Scheme())
	if err != nil {
		return err
	}
	o.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// Each gets each named object of a kind in namespace and calls do on it.
// One that is missing or refused does not stop the others: every error is
// returned, together, once all were tried (a stopped context ends it).
func Each[T any, P Object[T]](ctx context.Context, c client.Client, namespace, kind string, names []string, do func(P) error) error {
	var errs []error
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		o := P(new(T))
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: n}, o); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", kind, n, err))
			continue
		}
		if err := do(o); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Get returns the named object of a kind in namespace, with its apiVersion
// and kind set; an error names the kind and the object.
func Get[T any, P Object[T]](ctx context.Context, c client.Client, namespace, kind, name string) (P, error) {
	o := P(new(T))
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, o); err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, name, err)
	}
	return o, typed(c, o)
}

// ClientFor checks the output format a command was asked for, then
// connects: a bad -o fails before any request.
func (o *Options) ClientFor(format output.Format) (client.Client, error) {
	if err := format.Validate(); err != nil {
		return nil, err
	}
	return o.Client()
}

// Show starts a command that shows one object: it gets the named object
// of a kind and, when a structured format was asked for, prints it; shown
// then says the command is done.
func Show[T any, P Object[T]](cmd *cobra.Command, o *Options, format output.Format, kind, name string) (c client.Client, obj P, shown bool, err error) {
	if c, err = o.ClientFor(format); err != nil {
		return nil, nil, false, err
	}
	if obj, err = Get[T, P](cmd.Context(), c, o.Namespace, kind, name); err != nil {
		return nil, nil, false, err
	}
	shown, err = format.Structured(cmd.OutOrStdout(), obj)
	return c, obj, shown, err
}
